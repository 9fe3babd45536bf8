//! The receiver's iterators: [`Iter`], [`TryIter`] and [`IntoIter`].

use super::{Receiver, TryRecvError};

/// The iterator of [`Receiver::iter`]: waits for each message, ends when the
/// channel is empty and disconnected. Steps that wait are recorded (kind
/// `chan_recv`).
///
/// # Examples
///
/// ```
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// tx.send('a').unwrap();
/// drop(tx);
/// let mut iter = rx.iter();
/// assert_eq!(iter.next(), Some('a'));
/// assert_eq!(iter.next(), None);
/// ```
#[derive(Debug)]
pub struct Iter<'a, T: 'a> {
    pub(super) rx: &'a Receiver<T>,
}

impl<T> Iterator for Iter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self.rx.inner.try_recv() {
            Ok(t) => Some(t),
            Err(TryRecvError::Empty) => {
                let result = self.rx.recv_blocking().ok();
                crate::profile::keep_frame();
                result
            }
            Err(TryRecvError::Disconnected) => None,
        }
    }
}

/// The iterator of [`Receiver::try_iter`]: yields the messages already
/// waiting, never blocks, records nothing.
///
/// # Examples
///
/// ```
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// tx.send(1).unwrap();
/// let mut iter = rx.try_iter();
/// assert_eq!(iter.next(), Some(1));
/// assert_eq!(iter.next(), None);
/// ```
#[derive(Debug)]
pub struct TryIter<'a, T: 'a> {
    pub(super) rx: &'a Receiver<T>,
}

impl<T> Iterator for TryIter<'_, T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        self.rx.inner.try_recv().ok()
    }
}

/// The iterator that owns a [`Receiver`] (`for msg in rx`): waits for each
/// message, ends when the channel is empty and disconnected. Steps that wait
/// are recorded (kind `chan_recv`).
///
/// # Examples
///
/// ```
/// use std::thread;
/// use syncprof::mpsc::channel;
///
/// let (tx, rx) = channel();
/// thread::spawn(move || {
///     tx.send(1).unwrap();
///     tx.send(2).unwrap();
/// });
/// let mut total = 0;
/// for n in rx {
///     total += n;
/// }
/// assert_eq!(total, 3);
/// ```
#[derive(Debug)]
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T> Iterator for IntoIter<T> {
    type Item = T;

    #[inline]
    fn next(&mut self) -> Option<T> {
        match self.rx.inner.try_recv() {
            Ok(t) => Some(t),
            Err(TryRecvError::Empty) => {
                let result = self.rx.recv_blocking().ok();
                crate::profile::keep_frame();
                result
            }
            Err(TryRecvError::Disconnected) => None,
        }
    }
}

impl<'a, T> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}
