//! Live output: the executors pass their output to `ctx.output` while they run (stream, bytes,
//! contiguous offsets), besides their bounded output ports.

use super::sandbox_support::*;
use cheng_node::{Node, OutputStream};
use cheng_test_support::LiveChunks;
use serde_json::json;

#[tokio::test]
async fn code_shell_passes_the_sandboxed_scripts_output_on() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let node = cheng_nodes_code::shell::CodeShell;
    let (ctx, keep) = LiveChunks::context(&node, &ws);
    let out = node
        .run(
            &ctx,
            with_defaults(
                &node,
                json!({"script": "echo one; echo two >&2; echo three"}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(keep.text(OutputStream::Stdout), "one\nthree\n");
    assert_eq!(keep.text(OutputStream::Stderr), "two\n");
}

#[cfg(feature = "js")]
#[tokio::test]
async fn code_js_passes_console_lines_on() {
    super::sandbox_support::use_js_worker();
    let (_d, ws) = workspace();
    let registry = cheng_node::Registry::from_inventory_with(|_| true);
    let node = registry
        .get("tools/code_js")
        .expect("tools/code_js is registered when its gate is set");
    let (ctx, keep) = LiveChunks::context(node.as_ref(), &ws);
    let input = with_defaults(
        node.as_ref(),
        json!({"script": "console.log('a', 1); console.error('b'); console.info('☃'); 7"}),
    );
    let out = node.run(&ctx, input).await.unwrap();
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(keep.text(OutputStream::Stdout), "a 1\n☃\n");
    assert_eq!(keep.text(OutputStream::Stderr), "b\n");
}

#[cfg(feature = "python")]
#[tokio::test]
async fn code_python_passes_the_scripts_prints_on() {
    if !sandbox_available() {
        return;
    }
    let (_d, ws) = workspace();
    let registry = cheng_node::Registry::from_inventory_with(|_| true);
    let node = registry
        .get("tools/code_python")
        .expect("tools/code_python is registered when its gate is set");
    let (ctx, keep) = LiveChunks::context(node.as_ref(), &ws);
    let script = "import sys\nprint('p1', flush=True)\nprint('e1', file=sys.stderr, flush=True)\nprint('p2')";
    let out = node
        .run(
            &ctx,
            with_defaults(node.as_ref(), json!({"script": script})),
        )
        .await
        .unwrap();
    assert_eq!(out["success"], true, "{out:?}");
    assert_eq!(keep.text(OutputStream::Stdout), "p1\np2\n");
    assert_eq!(keep.text(OutputStream::Stderr), "e1\n");
}
