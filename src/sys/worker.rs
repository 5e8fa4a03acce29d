//! A named thread that runs queued jobs one at a time, in order, for whatever
//! the main loop must not wait on. [`Worker::finish`] (and `Drop`) closes the
//! queue, lets the thread run what is left (fast once shutdown is set) and
//! joins it, so no worker outlives its owner.

use std::thread::JoinHandle;

use crossbeam_channel::{unbounded, Sender};

pub(crate) struct Worker<J: Send + 'static> {
    tx: Option<Sender<J>>,
    handle: Option<JoinHandle<()>>,
}

impl<J: Send + 'static> Worker<J> {
    pub(crate) fn spawn(
        name: &str,
        mut run: impl FnMut(J) + Send + 'static,
    ) -> std::io::Result<Worker<J>> {
        let (tx, rx) = unbounded::<J>();
        let label = name.to_owned();
        let handle = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                for job in rx {
                    // A bug in one job must not silently end every later one.
                    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(job))).is_err()
                    {
                        log::error!(
                            "a {label} job panicked (a bug); the {label} worker carries on"
                        );
                    }
                }
            })?;
        Ok(Worker {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    pub(crate) fn submit(&self, job: J) {
        if let Some(tx) = &self.tx {
            // A closed channel means the worker is finishing: the job is dropped.
            let _ = tx.send(job);
        }
    }

    /// Runs what is queued, then stops the thread.
    pub(crate) fn finish(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl<J: Send + 'static> Drop for Worker<J> {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use std::sync::Arc;

    #[test]
    fn a_panicking_job_does_not_stop_the_worker() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let mut w = Worker::spawn("test", move |j: u32| {
            assert!(j != 1, "job one fails");
            s.lock().push(j);
        })
        .unwrap();
        for j in 0..3 {
            w.submit(j);
        }
        w.finish();
        assert_eq!(*seen.lock(), vec![0, 2]);
    }

    #[test]
    fn runs_jobs_in_order_and_finish_drains() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let mut w = Worker::spawn("test", move |j: u32| s.lock().push(j)).unwrap();
        for j in 0..100 {
            w.submit(j);
        }
        w.finish();
        assert_eq!(*seen.lock(), (0..100).collect::<Vec<_>>());
        w.submit(7);
        assert_eq!(
            seen.lock().len(),
            100,
            "a finished worker takes no more jobs"
        );
    }
}
