//! `GET /api/runs/{id}/events`: a run's events as Server-Sent Events, from its log.
//!
//! Each reader keeps its own position in the run's bounded log and waits on the log's newest
//! number, so a slow reader only falls behind (and is told what it missed), never holds the run
//! back. `Last-Event-ID` resumes after the event it names.

use crate::runs::{Logged, Run};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::stream::{self, Stream};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Events taken from the log per lock.
const BATCH: usize = 256;

struct Reader {
    run: Arc<Run>,
    newest: watch::Receiver<u64>,
    /// The number of the last event sent.
    seen: u64,
    ready: VecDeque<Event>,
    done: bool,
}

/// The stream for a reader that has seen the events up to `last_event_id`.
pub fn stream(
    run: Arc<Run>,
    last_event_id: u64,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let reader = Reader {
        newest: run.subscribe(),
        run,
        seen: last_event_id,
        ready: VecDeque::new(),
        done: false,
    };
    let events = stream::unfold(reader, |mut reader| async move {
        loop {
            if let Some(event) = reader.ready.pop_front() {
                return Some((Ok(event), reader));
            }
            if reader.done {
                return None;
            }
            // Marked seen before reading, so an event logged after the read wakes the wait.
            reader.newest.borrow_and_update();
            let (missed, events, finished) = reader.run.read(reader.seen, BATCH);
            if missed > 0 {
                reader
                    .ready
                    .push_back(Event::default().event("events_dropped").data(format!(
                        "{{\"event\":\"events_dropped\",\"missed\":{missed}}}"
                    )));
            }
            let caught_up = events.len() < BATCH;
            for Logged { id, name, data } in events {
                reader.seen = id;
                reader
                    .ready
                    .push_back(Event::default().id(id.to_string()).event(name).data(&*data));
            }
            if !reader.ready.is_empty() {
                reader.done = finished && caught_up;
                continue;
            }
            if finished {
                return None;
            }
            if reader.newest.changed().await.is_err() {
                return None;
            }
        }
    });
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
