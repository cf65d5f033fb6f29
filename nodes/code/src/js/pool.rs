//! Reusable script threads.
//!
//! Each run still gets a fresh QuickJS runtime; only the OS thread is reused. Back from a run
//! (its answer sent), a thread offers itself as idle, lets the answer go out ([`SETTLE`]), and
//! only then frees the run's runtime and prepares the next one
//! ([`super::engine::between_runs`]), so no caller waits for that work unless its task arrives
//! meanwhile (it then waits at most as long as making a runtime takes). Starting a thread
//! per run costs a stack mapping, its unmapping (a TLB shootdown on every core) and a cold malloc
//! arena — more than creating the QuickJS runtime itself. Idle threads wait for work for a while
//! and then exit; a thread stuck in a script never returns to the pool.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::time::Duration;

/// Work for a script thread.
pub type Task = Box<dyn FnOnce() + Send + 'static>;

/// Idle threads, each reachable through the sending half of its own queue.
static IDLE: Mutex<Vec<(u64, Sender<Task>)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// How long an idle thread waits for work before it exits.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle threads kept beyond this number exit at once.
const MAX_IDLE: usize = 4;
/// How long a thread back from a run leaves the processor to others before it frees that run's
/// runtime and prepares the next one.
const SETTLE: Duration = Duration::from_millis(1);

fn idle() -> std::sync::MutexGuard<'static, Vec<(u64, Sender<Task>)>> {
    // A panic while holding this lock cannot leave the list inconsistent: keep using it.
    IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `task` on an idle script thread, or on a new one with `stack_bytes` of stack.
pub fn run(task: Task, stack_bytes: usize) -> std::io::Result<()> {
    let mut task = task;
    loop {
        let Some((_, sender)) = idle().pop() else { break };
        match sender.send(task) {
            Ok(()) => return Ok(()),
            // The thread is gone (it panicked); try the next one.
            Err(mpsc::SendError(returned)) => task = returned,
        }
    }
    let (sender, receiver) = mpsc::channel::<Task>();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let own = sender.clone();
    // The queue holds the first task before the thread starts, so `send` cannot fail here.
    let _ = sender.send(task);
    std::thread::Builder::new()
        .name("cheng-code-js".into())
        .stack_size(stack_bytes)
        .spawn(move || work(id, own, receiver))
        .map(|_| ())
}

fn work(id: u64, own: Sender<Task>, receiver: Receiver<Task>) {
    let mut next = receiver.recv().ok();
    while let Some(task) = next.take() {
        task();
        {
            let mut idle = idle();
            if idle.len() >= MAX_IDLE {
                return;
            }
            idle.push((id, own.clone()));
        }
        // The answer goes out first (the caller's wake-up, the reply, the client reading it):
        // on a busy machine that work would otherwise wait for this thread's. A task arriving
        // in the meantime runs without a spare, as every run did before spares.
        next = match receiver.recv_timeout(SETTLE) {
            Ok(task) => Some(task),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                super::engine::between_runs();
                wait_idle(id, &receiver)
            }
        };
    }
}

/// Waits for the next task as an idle thread; `None` when the thread should end.
fn wait_idle(id: u64, receiver: &Receiver<Task>) -> Option<Task> {
    match receiver.recv_timeout(IDLE_TIMEOUT) {
        Ok(task) => Some(task),
        Err(RecvTimeoutError::Timeout) => {
            let mut idle = idle();
            match idle.iter().position(|(i, _)| *i == id) {
                Some(at) => {
                    idle.remove(at);
                    None
                }
                // Someone took this thread just now: their task is on its way.
                None => {
                    drop(idle);
                    receiver.recv().ok()
                }
            }
        }
        Err(RecvTimeoutError::Disconnected) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits (bounded) until `n` threads are idle.
    fn wait_for_idle(n: usize) -> bool {
        for _ in 0..500 {
            if idle().len() == n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    #[test]
    fn an_idle_thread_serves_the_next_task() {
        let (done, results) = mpsc::channel();
        let mut threads = std::collections::HashSet::new();
        for _ in 0..3 {
            let done = done.clone();
            run(Box::new(move || done.send(std::thread::current().id()).unwrap_or(())), 1 << 20)
                .expect("thread starts");
            threads.insert(results.recv().expect("task ran"));
            assert!(wait_for_idle(1), "the thread went back to the pool");
        }
        assert_eq!(threads.len(), 1, "one thread served every task");
    }
}
