//! The competing load: a child process (this bench binary again, with the
//! hidden `--spin` argument) that keeps one core busy while the grid runs,
//! killed when its guard drops, on a panic too.

use std::hint::black_box;
use std::process::{Child, Command, Stdio};

use super::harness::work;

/// The running spinner; dropping it kills and reaps the child.
pub(super) struct Spinner(Child);

impl Spinner {
    pub(super) fn start() -> Spinner {
        let exe = std::env::current_exe().expect("the bench binary's path");
        let child = Command::new(exe)
            .arg("--spin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning the competing load");
        Spinner(child)
    }

    pub(super) fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        // Already gone (an error) is fine: all we want is that it is.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The child's side: burn one core until killed, or until the parent is
/// gone (killed itself, so that no guard dropped): checked every ~1 ms.
pub(super) fn spin() -> ! {
    let parent = std::os::unix::process::parent_id();
    loop {
        for _ in 0..1000 {
            black_box(work(black_box(1000)));
        }
        if std::os::unix::process::parent_id() != parent {
            std::process::exit(0);
        }
    }
}
