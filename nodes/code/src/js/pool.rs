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
//!
//! A caller that knows a run is on its way ([`wake`]: a call is being read and checked) wakes the
//! idle thread that will take it, ahead of the task: the thread then waits for the task on the
//! processor ([`EXPECTING`]), so the hand-off costs no wake-up (on an idle machine, tens of
//! microseconds — about what a small script takes to run), and meanwhile walks its spare so the
//! run finds it in the processor's cache ([`super::engine::touch_spare`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Work for a script thread.
pub type Task = Box<dyn FnOnce() + Send + 'static>;

/// What a script thread's queue carries.
enum Message {
    Run(Task),
    /// A task is on its way ([`wake`]).
    Expect,
}

/// Idle threads, each reachable through the sending half of its own queue; the next task goes
/// to the last one.
static IDLE: Mutex<Vec<(u64, Sender<Message>)>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(0);
/// How long an idle thread waits for work before it exits.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Idle threads kept beyond this number exit at once.
const MAX_IDLE: usize = 4;
/// How long a thread back from a run leaves the processor to others before it frees that run's
/// runtime and prepares the next one.
const SETTLE: Duration = Duration::from_millis(1);
/// How long a thread told to expect a task waits for it on the processor before it sleeps again.
const EXPECTING: Duration = Duration::from_micros(500);

fn idle() -> std::sync::MutexGuard<'static, Vec<(u64, Sender<Message>)>> {
    // A panic while holding this lock cannot leave the list inconsistent: keep using it.
    IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `task` on an idle script thread, or on a new one with `stack_bytes` of stack.
pub fn run(task: Task, stack_bytes: usize) -> std::io::Result<()> {
    let mut message = Message::Run(task);
    loop {
        let Some((_, sender)) = idle().pop() else {
            break;
        };
        match sender.send(message) {
            Ok(()) => return Ok(()),
            // The thread is gone (it panicked); try the next one.
            Err(mpsc::SendError(returned)) => message = returned,
        }
    }
    let (sender, receiver) = mpsc::channel::<Message>();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let own = sender.clone();
    // The queue holds the first task before the thread starts, so `send` cannot fail here.
    let _ = sender.send(message);
    std::thread::Builder::new()
        .name("cheng-code-js".into())
        .stack_size(stack_bytes)
        .spawn(move || work(id, own, receiver))
        .map(|_| ())
}

/// Tells the idle thread the next [`run`] will take that a task is on its way (see the module
/// documentation). Without an idle thread, nothing happens.
pub fn wake() {
    if let Some((_, sender)) = idle().last() {
        // A thread that is gone is skipped by `run`.
        let _ = sender.send(Message::Expect);
    }
}

fn work(id: u64, own: Sender<Message>, receiver: Receiver<Message>) {
    let mut next = next_task(&receiver, None).ok();
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
        next = match next_task(&receiver, Some(SETTLE)) {
            Ok(task) => Some(task),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                super::engine::between_runs();
                wait_idle(id, &receiver)
            }
        };
    }
}

/// The next task within `timeout` (`None`: however long it takes). Told to expect one, the thread
/// touches its spare and waits on the processor for [`EXPECTING`], then sleeps again.
fn next_task(
    receiver: &Receiver<Message>,
    timeout: Option<Duration>,
) -> Result<Task, RecvTimeoutError> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let message = match deadline {
            Some(deadline) => {
                receiver.recv_timeout(deadline.saturating_duration_since(Instant::now()))?
            }
            None => receiver
                .recv()
                .map_err(|_| RecvTimeoutError::Disconnected)?,
        };
        if let Message::Run(task) = message {
            return Ok(task);
        }
        super::engine::touch_spare();
        let expecting = Instant::now() + EXPECTING;
        while Instant::now() < expecting {
            match receiver.try_recv() {
                Ok(Message::Run(task)) => return Ok(task),
                Ok(Message::Expect) | Err(TryRecvError::Empty) => std::thread::yield_now(),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            }
        }
    }
}

/// Waits for the next task as an idle thread; `None` when the thread should end.
fn wait_idle(id: u64, receiver: &Receiver<Message>) -> Option<Task> {
    match next_task(receiver, Some(IDLE_TIMEOUT)) {
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
                    next_task(receiver, None).ok()
                }
            }
        }
        Err(RecvTimeoutError::Disconnected) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pool is the process's: its tests take turns.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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

    /// `Expect` is never a task: the task after it is returned, however many came before it; told
    /// in vain, the thread waits out its timeout; its queue closing ends it.
    #[test]
    fn expecting_a_task_is_not_a_task() {
        let (sender, receiver) = mpsc::channel();
        let (done, ran) = mpsc::channel();
        for _ in 0..2 {
            sender.send(Message::Expect).expect("queued");
        }
        sender
            .send(Message::Run(Box::new(move || done.send(()).unwrap_or(()))))
            .expect("queued");
        let task = next_task(&receiver, None)
            .map_err(|_| "no task")
            .expect("the task after the notices");
        task();
        assert!(ran.try_recv().is_ok(), "the task returned was the one sent");

        sender.send(Message::Expect).expect("queued");
        assert!(matches!(
            next_task(&receiver, Some(Duration::from_millis(2))),
            Err(RecvTimeoutError::Timeout)
        ));

        sender.send(Message::Expect).expect("queued");
        drop(sender);
        assert!(matches!(
            next_task(&receiver, Some(Duration::from_secs(5))),
            Err(RecvTimeoutError::Disconnected)
        ));
    }

    /// A thread told to expect a task takes the next one and stays the pool's only thread; told
    /// in vain, it goes back to sleep and still serves later tasks.
    #[test]
    fn a_woken_thread_takes_the_task_it_was_told_of() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let (done, results) = mpsc::channel();
        let task = |done: mpsc::Sender<std::thread::ThreadId>| -> Task {
            Box::new(move || done.send(std::thread::current().id()).unwrap_or(()))
        };
        run(task(done.clone()), 1 << 20).expect("thread starts");
        let first = results.recv().expect("task ran");
        assert!(wait_for_idle(1), "the thread went back to the pool");
        wake();
        assert_eq!(idle().len(), 1, "the woken thread is still the idle one");
        run(task(done.clone()), 1 << 20).expect("the woken thread takes it");
        assert_eq!(results.recv().expect("task ran"), first);
        assert!(wait_for_idle(1));
        wake();
        std::thread::sleep(EXPECTING * 4);
        run(task(done), 1 << 20).expect("the thread woken in vain takes it");
        assert_eq!(results.recv().expect("task ran"), first);
        assert!(wait_for_idle(1), "still one thread");
    }

    #[test]
    fn an_idle_thread_serves_the_next_task() {
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let (done, results) = mpsc::channel();
        let mut threads = std::collections::HashSet::new();
        for _ in 0..3 {
            let done = done.clone();
            run(
                Box::new(move || done.send(std::thread::current().id()).unwrap_or(())),
                1 << 20,
            )
            .expect("thread starts");
            threads.insert(results.recv().expect("task ran"));
            assert!(wait_for_idle(1), "the thread went back to the pool");
        }
        assert_eq!(threads.len(), 1, "one thread served every task");
    }
}
