//! A live-output sink for tests: keeps every chunk a node passes to `ctx.output` and hands
//! back each stream's text, checking the offsets on the way.

use cheng_node::{Decision, Node, Output, OutputSink, OutputStream, RunContext};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Every chunk a run passed on, in order: (stream, text, offset).
#[derive(Default)]
pub struct LiveChunks(Mutex<Vec<(OutputStream, String, u64)>>);

impl OutputSink for LiveChunks {
    fn chunk(&self, stream: OutputStream, bytes: &[u8], offset: u64) {
        self.0.lock().expect("live chunks").push((
            stream,
            String::from_utf8_lossy(bytes).into_owned(),
            offset,
        ));
    }
}

impl LiveChunks {
    /// An approved context for `node` in `workspace` whose live output lands here.
    pub fn context(node: &dyn Node, workspace: &Path) -> (RunContext, Arc<LiveChunks>) {
        let chunks = Arc::new(LiveChunks::default());
        let mut ctx =
            RunContext::for_workspace(node.spec().id, workspace.to_path_buf(), Decision::Approved);
        ctx.output = Output::new(chunks.clone());
        (ctx, chunks)
    }

    /// The text of `stream` from one process: offsets must be contiguous from 0.
    pub fn text(&self, stream: OutputStream) -> String {
        self.collect(stream, false)
    }

    /// The text of `stream` from a node that runs several commands one after another (git):
    /// offsets are contiguous within each command and start again at 0 with the next.
    pub fn text_of_processes(&self, stream: OutputStream) -> String {
        self.collect(stream, true)
    }

    fn collect(&self, stream: OutputStream, restarts: bool) -> String {
        let mut text = String::new();
        let mut next = 0;
        for (_, chunk, offset) in self
            .0
            .lock()
            .expect("live chunks")
            .iter()
            .filter(|c| c.0 == stream)
        {
            assert!(
                *offset == next || (restarts && *offset == 0),
                "{stream:?} offsets must be contiguous: {offset} after {next}"
            );
            next = offset + chunk.len() as u64;
            text.push_str(chunk);
        }
        text
    }
}
