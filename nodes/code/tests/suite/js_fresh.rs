//! tools/code_js: every call starts from a runtime no script has touched, although its worker
//! prepares the next call's runtime ahead (the attack: leave state behind for the next call).

// Links the node crate so its inventory registration is present.
use cheng_nodes_code as _;

use cheng_node::{Decision, Registry, RunContext, Values};
use serde_json::{json, Value};

const ID: &str = "tools/code_js";

async fn run(input: Value) -> Values {
    super::sandbox_support::use_js_worker();
    let registry = Registry::from_inventory_with(|_| true);
    let node = registry
        .get(ID)
        .expect("tools/code_js is linked and registered when its gate is set");
    let ctx = RunContext::for_workspace(ID, std::env::temp_dir(), Decision::Denied);
    node.run(&ctx, input.as_object().cloned().expect("object"))
        .await
        .expect("code_js reports failures as outputs")
}

#[tokio::test]
async fn state_left_by_one_call_is_not_seen_by_the_next() {
    let plant =
        "globalThis.leak = 42; Object.prototype.polluted = 1; JSON.parse = () => 'hijacked'; \
                 Math.max = () => -1; console.log('planted'); 'planted'";
    let check = "[typeof leak, ({}).polluted === undefined, JSON.parse('[1]'), Math.max(1, 2)]";
    // Sequential calls reuse one script thread, which prepares the next runtime once a call has
    // been answered and nothing asked for the thread for a millisecond: the pause lets it.
    for round in 0..5 {
        let planted = run(json!({"script": plant})).await;
        assert_eq!(planted["result"], "planted", "round {round}: {planted:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let checked = run(json!({"script": check})).await;
        assert_eq!(
            checked["result"],
            json!(["undefined", true, [1], 2]),
            "round {round}: {checked:#?}"
        );
        assert_eq!(
            checked["stdout"], "",
            "round {round}: the console is the call's own"
        );
    }
}

#[tokio::test]
async fn limits_apply_to_every_call_on_a_warm_thread() {
    let hog = "const parts = []; for (let i = 0; i < 32; i++) parts.push('x'.repeat(1024 * 1024 - 64) + i); parts.length";
    for round in 0..3 {
        let warm = run(json!({"script": "1"})).await;
        assert_eq!(warm["result"], 1);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let small = run(json!({"script": hog, "memory_mb": 8})).await;
        assert_eq!(
            small["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT",
            "round {round}: {small:#?}"
        );
        let spin = run(json!({"script": "for (;;) {}", "timeout_ms": 50})).await;
        assert_eq!(
            spin["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT",
            "round {round}: {spin:#?}"
        );
        let large = run(json!({"script": hog, "memory_mb": 64})).await;
        assert_eq!(large["result"], 32, "round {round}: {large:#?}");
    }
}
