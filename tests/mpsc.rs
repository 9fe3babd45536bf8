//! `syncprof::mpsc` behaves exactly like `std::sync::mpsc`: every test body
//! here runs twice, once against each module (see `same_behaviour!`).

use std::thread;
use std::time::{Duration, Instant};

/// Instantiates each test body twice: in `std_mpsc` with `$m` bound to
/// `std::sync::mpsc`, and in `syncprof_mpsc` with `$m` bound to
/// `syncprof::mpsc`.
macro_rules! same_behaviour {
    ($(fn $name:ident($m:ident) $body:block)*) => {
        mod std_mpsc {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    use std::sync::mpsc as $m;
                    $body
                }
            )*
        }

        mod syncprof_mpsc {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    use syncprof::mpsc as $m;
                    $body
                }
            )*
        }
    };
}

const SENDERS: usize = 4;
const MESSAGES: usize = 100_000;

/// Checks that the messages of each sender arrive in the order it sent them
/// and that all of them arrive.
fn check_fifo(received: impl Iterator<Item = (usize, usize)>) {
    let mut next = [0usize; SENDERS];
    let mut total = 0;
    for (sender, seq) in received {
        assert_eq!(seq, next[sender], "sender {sender}'s messages out of order");
        next[sender] += 1;
        total += 1;
    }
    assert_eq!(total, MESSAGES);
    assert!(next.iter().all(|&n| n == MESSAGES / SENDERS), "{next:?}");
}

same_behaviour! {
    fn fifo_order_over_100k_messages_from_4_senders(mpsc) {
        let (tx, rx) = mpsc::channel();
        let senders: Vec<_> = (0..SENDERS)
            .map(|id| {
                let tx = tx.clone();
                thread::spawn(move || {
                    for seq in 0..MESSAGES / SENDERS {
                        tx.send((id, seq)).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        check_fifo(rx.iter());
        assert_eq!(rx.recv(), Err(mpsc::RecvError));
        for sender in senders {
            sender.join().unwrap();
        }
    }

    fn fifo_order_through_a_small_bounded_buffer(mpsc) {
        let (tx, rx) = mpsc::sync_channel(8);
        let senders: Vec<_> = (0..SENDERS)
            .map(|id| {
                let tx = tx.clone();
                thread::spawn(move || {
                    for seq in 0..MESSAGES / SENDERS {
                        tx.send((id, seq)).unwrap();
                    }
                })
            })
            .collect();
        drop(tx);
        check_fifo(rx.iter());
        for sender in senders {
            sender.join().unwrap();
        }
    }

    fn rendezvous_hands_over_10k_messages(mpsc) {
        let (tx, rx) = mpsc::sync_channel(0);
        // Nobody is waiting to receive: a rendezvous has no room at all.
        assert_eq!(tx.try_send(0), Err(mpsc::TrySendError::Full(0)));
        let sender = thread::spawn(move || {
            for i in 0..10_000u32 {
                tx.send(i).unwrap();
            }
        });
        for i in 0..10_000u32 {
            assert_eq!(rx.recv(), Ok(i));
        }
        sender.join().unwrap();
        assert_eq!(rx.recv(), Err(mpsc::RecvError));
    }

    fn rendezvous_send_waits_for_the_receiver(mpsc) {
        let (tx, rx) = mpsc::sync_channel(0);
        let sender = thread::spawn(move || {
            let start = Instant::now();
            tx.send(1).unwrap();
            start.elapsed()
        });
        thread::sleep(Duration::from_millis(30));
        assert_eq!(rx.recv(), Ok(1));
        assert!(sender.join().unwrap() >= Duration::from_millis(25));
    }

    fn dropping_the_receiver_disconnects_the_senders(mpsc) {
        let (tx, rx) = mpsc::channel::<String>();
        let (sync_tx, sync_rx) = mpsc::sync_channel::<String>(1);
        drop(rx);
        drop(sync_rx);
        assert_eq!(tx.send("a".into()), Err(mpsc::SendError("a".to_string())));
        assert_eq!(sync_tx.send("b".into()), Err(mpsc::SendError("b".to_string())));
        assert_eq!(sync_tx.try_send("c".into()), Err(mpsc::TrySendError::Disconnected("c".to_string())));
    }

    fn dropping_the_receiver_wakes_a_blocked_sender_with_its_value(mpsc) {
        let (tx, rx) = mpsc::sync_channel::<String>(1);
        tx.send("queued".into()).unwrap();
        let sender = thread::spawn(move || tx.send("blocked".into()));
        thread::sleep(Duration::from_millis(20));
        drop(rx);
        assert_eq!(sender.join().unwrap(), Err(mpsc::SendError("blocked".to_string())));
    }

    fn dropping_every_sender_disconnects_after_the_queue_drains(mpsc) {
        let (tx, rx) = mpsc::channel();
        let tx2 = tx.clone();
        tx.send(1).unwrap();
        tx2.send(2).unwrap();
        drop(tx);
        assert_eq!(rx.try_recv(), Ok(1));
        drop(tx2);
        assert_eq!(rx.recv(), Ok(2));
        assert_eq!(rx.recv(), Err(mpsc::RecvError));
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
        assert_eq!(rx.recv_timeout(Duration::from_secs(1)), Err(mpsc::RecvTimeoutError::Disconnected));
    }

    fn dropping_the_last_sender_wakes_a_blocked_receiver(mpsc) {
        let (tx, rx) = mpsc::sync_channel::<u8>(0);
        let dropper = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            drop(tx);
        });
        assert_eq!(rx.recv(), Err(mpsc::RecvError));
        dropper.join().unwrap();
    }

    fn try_operations_report_empty_full_and_disconnected(mpsc) {
        let (tx, rx) = mpsc::sync_channel(1);
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(tx.try_send(2), Err(mpsc::TrySendError::Full(2)));
        assert_eq!(rx.try_recv(), Ok(1));
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));

        let (tx, rx) = mpsc::channel::<u8>();
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Empty));
        drop(tx);
        assert_eq!(rx.try_recv(), Err(mpsc::TryRecvError::Disconnected));
    }

    fn recv_timeout_times_out_then_reports_disconnection(mpsc) {
        let (tx, rx) = mpsc::channel::<u8>();
        let timeout = Duration::from_millis(30);
        let start = Instant::now();
        assert_eq!(rx.recv_timeout(timeout), Err(mpsc::RecvTimeoutError::Timeout));
        assert!(start.elapsed() >= timeout);
        assert_eq!(rx.recv_timeout(Duration::ZERO), Err(mpsc::RecvTimeoutError::Timeout));
        drop(tx);
        assert_eq!(rx.recv_timeout(timeout), Err(mpsc::RecvTimeoutError::Disconnected));
    }

    fn recv_timeout_returns_a_message_that_arrives_in_time(mpsc) {
        let (tx, rx) = mpsc::channel();
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(10));
            tx.send(5).unwrap();
            thread::sleep(Duration::from_millis(10));
            tx.send(6).unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(5));
        // A timeout that overflows a deadline waits without limit, as in std.
        assert_eq!(rx.recv_timeout(Duration::MAX), Ok(6));
        sender.join().unwrap();
        assert_eq!(rx.recv_timeout(Duration::MAX), Err(mpsc::RecvTimeoutError::Disconnected));
    }

    fn iterators_end_on_disconnect(mpsc) {
        let (tx, rx) = mpsc::channel();
        let sender = thread::spawn(move || {
            for i in 0..100 {
                if i % 10 == 0 {
                    thread::sleep(Duration::from_millis(1));
                }
                tx.send(i).unwrap();
            }
        });
        assert_eq!(rx.iter().collect::<Vec<_>>(), (0..100).collect::<Vec<_>>());
        sender.join().unwrap();
        assert_eq!(rx.iter().next(), None);

        let (tx, rx) = mpsc::sync_channel(2);
        let sender = thread::spawn(move || {
            for i in 0..50 {
                tx.send(i).unwrap();
            }
        });
        let mut seen = Vec::new();
        for i in &rx {
            seen.push(i);
        }
        assert_eq!(seen, (0..50).collect::<Vec<_>>());
        sender.join().unwrap();

        let (tx, rx) = mpsc::channel();
        let sender = thread::spawn(move || {
            for i in 0..50 {
                tx.send(i).unwrap();
            }
        });
        assert_eq!(rx.into_iter().sum::<i32>(), (0..50).sum());
        sender.join().unwrap();
    }

    fn try_iter_takes_what_is_queued_and_never_waits(mpsc) {
        let (tx, rx) = mpsc::channel();
        assert_eq!(rx.try_iter().next(), None);
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]);
        assert_eq!(rx.try_iter().next(), None);
        tx.send(3).unwrap();
        drop(tx);
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), [3]);
    }

    fn senders_can_be_shared_between_threads(mpsc) {
        let (tx, rx) = mpsc::channel();
        let tx = &tx;
        thread::scope(|scope| {
            for i in 0..4 {
                scope.spawn(move || tx.send(i).unwrap());
            }
        });
        let mut got: Vec<i32> = rx.try_iter().collect();
        got.sort();
        assert_eq!(got, [0, 1, 2, 3]);
    }

    fn handles_are_debug(mpsc) {
        let (tx, rx) = mpsc::channel::<u8>();
        let (sync_tx, sync_rx) = mpsc::sync_channel::<u8>(0);
        for shown in [
            format!("{tx:?}"),
            format!("{rx:?}"),
            format!("{sync_tx:?}"),
            format!("{sync_rx:?}"),
            format!("{:?}", rx.iter()),
            format!("{:?}", rx.try_iter()),
            format!("{:?}", sync_rx.into_iter()),
        ] {
            assert!(!shown.is_empty());
        }
    }
}
