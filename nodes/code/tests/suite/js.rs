//! tools/code_js: results, console, limits, and attempts to leave the sandbox.

use std::time::Duration;

use super::sandbox_support::assert_cut_to;

// Links the node crate so its inventory registration is present.
use cheng_nodes_code as _;

use cheng_node::{Decision, Registry, RunContext, Values};
use serde_json::{json, Value};

const ID: &str = "tools/code_js";

fn context() -> RunContext {
    RunContext::for_workspace(ID, std::env::temp_dir(), Decision::Denied)
}

async fn run_with(ctx: &RunContext, input: Value) -> Values {
    super::sandbox_support::use_js_worker();
    let registry = Registry::from_inventory_with(|_| true);
    let node = registry
        .get(ID)
        .expect("tools/code_js is linked and registered when its gate is set");
    let input = input.as_object().cloned().expect("test input is an object");
    node.run(ctx, input)
        .await
        .expect("code_js reports failures as outputs")
}

async fn run(input: Value) -> Values {
    run_with(&context(), input).await
}

/// Runs `script` and returns its result, failing the test (with the error) when it did not succeed.
async fn result_of(script: &str, input: Value) -> Value {
    let out = run(json!({"script": script, "input": input})).await;
    assert_eq!(out["success"], true, "{script}: {out:#?}");
    out["result"].clone()
}

/// Runs `script` and returns (error_kind, error), failing the test if it succeeded.
async fn failure_of(input: Value) -> (String, String) {
    let out = run(input.clone()).await;
    assert_eq!(out["success"], false, "{input}: {out:#?}");
    (
        out["error_kind"].as_str().unwrap_or_default().to_string(),
        out["error"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn final_expression_is_the_result_and_input_is_a_global() {
    assert_eq!(
        result_of(
            "input.values.reduce((a, b) => a + b, 0)",
            json!({"values": [1, 2, 3]})
        )
        .await,
        json!(6)
    );
    assert_eq!(
        result_of(
            "({sum: 1 + 1, name: input.name.toUpperCase()})",
            json!({"name": "x"})
        )
        .await,
        json!({"sum": 2, "name": "X"})
    );
    assert_eq!(result_of("input", json!(null)).await, Value::Null);
}

#[tokio::test]
async fn every_output_port_is_present() {
    let out = run(json!({"script": "1"})).await;
    for port in [
        "result",
        "isolation_level",
        "metrics",
        "stdout",
        "stderr",
        "warnings",
        "success",
        "error_kind",
        "terminal",
        "error",
    ] {
        assert!(out.contains_key(port), "missing {port}: {out:#?}");
    }
    assert_eq!(out["isolation_level"], "quickjs");
    let metrics = &out["metrics"];
    assert_eq!(metrics["memory_limit_bytes"], json!(128 * 1024 * 1024));
    assert_eq!(metrics["timeout_ms"], json!(5000));
    assert_eq!(metrics["max_stack_bytes"], json!(4 * 1024 * 1024));
    assert!(
        metrics["memory_used_bytes"].as_u64().is_some_and(|b| b > 0),
        "{metrics}"
    );
    assert!(metrics["duration_us"].is_u64(), "{metrics}");
}

#[tokio::test]
async fn undefined_and_statements_give_null() {
    assert_eq!(result_of("undefined", json!(null)).await, Value::Null);
    assert_eq!(result_of("let x = 1;", json!(null)).await, Value::Null);
    let out = run(json!({"script": "   "})).await;
    assert_eq!(out["success"], true);
    assert_eq!(out["result"], Value::Null);
    assert!(
        out["warnings"][0]
            .as_str()
            .unwrap_or_default()
            .contains("empty"),
        "{out:#?}"
    );
}

#[tokio::test]
async fn values_convert_like_json_stringify_where_json_can_say_it() {
    assert_eq!(
        result_of("[undefined, 1, NaN, Infinity, -0, 0.5]", json!(null)).await,
        json!([null, 1, null, null, 0, 0.5])
    );
    assert_eq!(
        result_of("({a: undefined, b: 2})", json!(null)).await,
        json!({"b": 2})
    );
    assert_eq!(
        result_of("new Date(0)", json!(null)).await,
        json!("1970-01-01T00:00:00.000Z")
    );
    assert_eq!(
        result_of("({toJSON() { return 'custom'; }})", json!(null)).await,
        json!("custom")
    );
    assert_eq!(
        result_of("12345678901234567890n", json!(null)).await,
        json!("12345678901234567890")
    );
    assert_eq!(
        result_of("({'a key': [true, null, 'é😀']})", json!(null)).await,
        json!({"a key": [true, null, "é😀"]})
    );
    let (kind, error) = failure_of(json!({"script": "({text: '\\ud800'})"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(
        error.contains("result.text contains text that is not valid Unicode"),
        "{error}"
    );
    assert_eq!(
        result_of("new TypeError('bad')", json!(null)).await,
        json!({"name": "TypeError", "message": "bad"})
    );
}

#[tokio::test]
async fn unconvertible_results_name_what_and_where() {
    let cases = [
        ("({a: {b() {}}})", "result.a.b is a function"),
        ("({list: [1, Symbol('s')]})", "result.list[1] is a symbol"),
        (
            "const o = {inner: {}}; o.inner.back = o; o",
            "result.inner.back refers back",
        ),
        ("({m: new Map([[1, 2]])})", "result.m is a Map"),
        ("new Set([1])", "result is a Set"),
        ("({p: Promise.resolve(1)})", "result.p is a promise"),
        (
            "({'odd key': () => 1})",
            "result[\"odd key\"] is a function",
        ),
        (
            "let v = []; for (let i = 0; i < 1000; i++) v = [v]; v",
            "nested deeper than 128",
        ),
        (
            "let v = []; for (let i = 0; i < 1000; i++) v = [v]; ({deep: v})",
            "result.deep[0][0]",
        ),
    ];
    for (script, expected) in cases {
        let (kind, error) = failure_of(json!({"script": script})).await;
        assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR", "{script}");
        assert!(
            error.contains(expected),
            "{script}: expected {expected:?} in {error:?}"
        );
    }
}

#[tokio::test]
async fn console_goes_to_stdout_and_stderr() {
    let out = run(json!({"script": "console.log('a', 1, {b: 2}); console.info('i'); console.debug('d'); console.warn('w'); console.error(new Error('e')); 7"})).await;
    assert_eq!(out["success"], true, "{out:#?}");
    assert_eq!(out["stdout"], "a 1 {\"b\":2}\ni\nd\n");
    let stderr = out["stderr"].as_str().unwrap_or_default();
    assert!(stderr.starts_with("w\nError: e\n"), "{stderr:?}");
    assert_eq!(out["result"], 7);
}

#[tokio::test]
async fn huge_console_output_is_bounded_head_and_tail() {
    let script = "for (let i = 0; i < 200000; i++) console.log('line ' + i + ' ' + 'x'.repeat(100)); console.error('z'.repeat(30e6)); 'done'";
    let out = run(json!({"script": script, "memory_mb": 512, "timeout_ms": 60000})).await;
    assert_eq!(out["success"], true, "{out:#?}");
    let stdout = out["stdout"].as_str().unwrap_or_default();
    // The documented 1 MiB console cap, head and tail, and the marker counts the rest.
    let written = out["metrics"]["stdout_bytes"].as_u64().unwrap_or_default();
    assert_cut_to("code_js stdout", stdout, written, 1 << 20);
    assert!(stdout.starts_with("line 0 "), "head kept");
    assert!(
        stdout
            .trim_end()
            .ends_with(&format!("line 199999 {}", "x".repeat(100))),
        "tail kept"
    );
    assert!(stdout.contains("omitted"), "marker present");
    assert!(
        out["metrics"]["stdout_bytes"]
            .as_u64()
            .is_some_and(|b| b > 20_000_000),
        "{:#?}",
        out["metrics"]
    );
    let stderr = out["stderr"].as_str().unwrap_or_default();
    // console.error's 30e6 bytes and its newline.
    assert_eq!(
        out["metrics"]["stderr_bytes"], 30_000_001,
        "{}",
        out["metrics"]
    );
    let (head, tail) = assert_cut_to("code_js stderr", stderr, 30_000_001, 1 << 20);
    assert!(head.bytes().all(|b| b == b'z') && tail.trim_end().bytes().all(|b| b == b'z'));
    assert!(out["warnings"].as_array().is_some_and(|w| w
        .iter()
        .any(|w| w.as_str().unwrap_or_default().starts_with("stdout was"))));
}

#[tokio::test]
async fn infinite_loops_time_out_even_inside_try() {
    for script in [
        "while (true) {}",
        "try { while (true) {} } catch (e) {} 'escaped'",
        "for (;;) { try { while (true) {} } finally { continue; } }",
    ] {
        let out = run(json!({"script": script, "timeout_ms": 200})).await;
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT",
            "{script}: {out:#?}"
        );
        assert_eq!(out["terminal"], false);
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains("timeout_ms=200"),
            "{out:#?}"
        );
    }
    // The process is alive and the next run is unaffected.
    assert_eq!(result_of("1 + 1", json!(null)).await, json!(2));
}

#[tokio::test]
async fn an_endless_promise_chain_times_out() {
    let out =
        run(json!({"script": "function f() { return Promise.resolve().then(f); } f(); 1", "timeout_ms": 200})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:#?}");
}

#[tokio::test]
async fn catastrophic_regex_backtracking_times_out() {
    let out =
        run(json!({"script": "/^(a+)+$/.test('a'.repeat(40) + 'b')", "timeout_ms": 300})).await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:#?}");
}

#[tokio::test]
async fn a_native_loop_that_ignores_interrupts_is_abandoned_at_the_deadline() {
    // reverse over a huge array-like object loops in C without polling the interrupt handler.
    let out = run(
        json!({"script": "Array.prototype.reverse.call({length: 2 ** 40})", "timeout_ms": 200}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:#?}");
    assert!(
        out["error"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be interrupted"),
        "{out:#?}"
    );
    // indexOf over the same does poll it, and stops at the deadline itself.
    let out = run(
        json!({"script": "Array.prototype.indexOf.call({length: 2 ** 52}, 1)", "timeout_ms": 200}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_TIMED_OUT", "{out:#?}");
    assert!(
        !out["error"]
            .as_str()
            .unwrap_or_default()
            .contains("cannot be interrupted"),
        "{out:#?}"
    );
}

#[tokio::test]
async fn memory_bombs_end_with_memory_limit() {
    let bombs = [
        "const a = []; while (true) a.push('x'.repeat(1024) + a.length);",
        "'x'.repeat(2 ** 29)",
        "const a = []; for (;;) a.push({n: a.length, s: [1, 2, 3]});",
        "new Uint8Array(64 * 1024 * 1024).length",
        "new Array(1e9).fill(0).length",
    ];
    for script in bombs {
        let out = run(json!({"script": script, "memory_mb": 16, "timeout_ms": 30000})).await;
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT",
            "{script}: {out:#?}"
        );
        assert!(
            out["error"]
                .as_str()
                .unwrap_or_default()
                .contains("memory_mb=16"),
            "{out:#?}"
        );
    }
    assert_eq!(
        result_of("'still alive'", json!(null)).await,
        json!("still alive")
    );
}

/// The limit is real (rquickjs ignores it when its `rust-alloc`/`allocator` features are on):
/// the same 32 MB allocation fails under 8 MB and succeeds under 64 MB.
#[tokio::test]
async fn memory_mb_is_enforced_by_quickjs() {
    let script =
        "const parts = []; for (let i = 0; i < 32; i++) parts.push('x'.repeat(1024 * 1024 - 64) + i); parts.length";
    let small = run(json!({"script": script, "memory_mb": 8})).await;
    assert_eq!(
        small["error_kind"], "LOCAL_EXECUTOR_MEMORY_LIMIT",
        "{small:#?}"
    );
    let large = run(json!({"script": script, "memory_mb": 64})).await;
    assert_eq!(large["result"], 32, "{large:#?}");
    assert!(
        large["metrics"]["memory_used_bytes"]
            .as_u64()
            .is_some_and(|b| b > 32 * 1024 * 1024),
        "{:#?}",
        large["metrics"]
    );
}

#[tokio::test]
async fn deep_recursion_is_a_clear_error_not_a_crash() {
    let (kind, error) =
        failure_of(json!({"script": "function f(n) { return f(n + 1) + 1; } f(0)"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(error.contains("recursed too deeply"), "{error}");
    let (kind, error) =
        failure_of(json!({"script": "eval('['.repeat(200000) + ']'.repeat(200000))"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR", "{error}");
    let (kind, _) =
        failure_of(json!({"script": "JSON.parse('['.repeat(200000) + ']'.repeat(200000))"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert_eq!(
        result_of(
            "function g(n) { return n === 0 ? 0 : 1 + g(n - 1); } g(1000)",
            json!(null)
        )
        .await,
        json!(1000)
    );
}

#[tokio::test]
async fn the_outside_world_is_not_reachable() {
    let attempts = [
        (
            "require('fs').readFileSync('/etc/passwd', 'utf8')",
            "require is not defined",
        ),
        ("fetch('http://127.0.0.1/')", "fetch is not defined"),
        ("new XMLHttpRequest()", "XMLHttpRequest is not defined"),
        ("std.loadFile('/etc/passwd')", "std is not defined"),
        ("os.exec(['/bin/sh', '-c', 'id'])", "os is not defined"),
        ("import * as std from 'std'; 1", "SyntaxError"),
        ("import('std')", "rejected"),
        ("import('/etc/passwd')", "rejected"),
        ("setTimeout(() => {}, 1)", "setTimeout is not defined"),
        ("process.env", "process is not defined"),
    ];
    for (script, expected) in attempts {
        let out = run(json!({"script": script})).await;
        assert_eq!(out["success"], false, "{script} must fail: {out:#?}");
        assert_eq!(
            out["error_kind"], "LOCAL_EXECUTOR_SCRIPT_ERROR",
            "{script}: {out:#?}"
        );
        let error = out["error"].as_str().unwrap_or_default();
        assert!(
            error.contains(expected),
            "{script}: expected {expected:?} in {error:?}"
        );
    }
    let warned = run(json!({"script": "require('fs')"})).await;
    assert!(
        warned["warnings"].as_array().is_some_and(|w| !w.is_empty()),
        "{warned:#?}"
    );
}

#[tokio::test]
async fn globals_hold_only_the_language_input_and_console() {
    let names = result_of("Object.getOwnPropertyNames(globalThis)", json!(null)).await;
    let names: Vec<&str> = names
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for forbidden in [
        "std",
        "os",
        "print",
        "scriptArgs",
        "require",
        "fetch",
        "process",
        "setTimeout",
        "__loadScript",
        "bjson",
        "Worker",
    ] {
        assert!(
            !names.contains(&forbidden),
            "global {forbidden} exists: {names:?}"
        );
    }
    assert!(
        names.contains(&"input") && names.contains(&"console"),
        "{names:?}"
    );
    // The Function constructor works, and stays inside the same sandbox.
    assert_eq!(
        result_of(
            "new Function('return typeof this.std + typeof this.os')()",
            json!(null)
        )
        .await,
        json!("undefinedundefined")
    );
}

#[tokio::test]
async fn each_call_gets_a_fresh_runtime() {
    assert_eq!(
        result_of(
            "globalThis.leak = 42; Object.prototype.polluted = 1; leak",
            json!(null)
        )
        .await,
        json!(42)
    );
    assert_eq!(
        result_of("[typeof leak, ({}).polluted]", json!(null)).await,
        json!(["undefined", null])
    );
}

#[tokio::test]
async fn promises_are_awaited() {
    assert_eq!(
        result_of("Promise.resolve(41).then((x) => x + 1)", json!(null)).await,
        json!(42)
    );
    assert_eq!(
        result_of(
            "(async () => { await null; return input.x * 2; })()",
            json!({"x": 21})
        )
        .await,
        json!(42)
    );
    let out =
        run(json!({"script": "Promise.resolve().then(() => console.log('later')); 'now'"})).await;
    assert_eq!(
        (out["result"].clone(), out["stdout"].clone()),
        (json!("now"), json!("later\n"))
    );
    let (kind, error) =
        failure_of(json!({"script": "(async () => { throw new RangeError('nope'); })()"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(
        error.contains("rejected") && error.contains("RangeError: nope"),
        "{error}"
    );
    let (kind, error) = failure_of(json!({"script": "new Promise(() => {})"})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(error.contains("never settled"), "{error}");
}

#[tokio::test]
async fn exceptions_carry_message_stack_and_line() {
    let script =
        "const a = 1;\nfunction broken() {\n  let q = 1;\n  q.missing.field = 2;\n}\nbroken();";
    let (kind, error) = failure_of(json!({"script": script})).await;
    assert_eq!(kind, "LOCAL_EXECUTOR_SCRIPT_ERROR");
    assert!(error.starts_with("TypeError: "), "{error}");
    assert!(error.contains("line 4"), "{error}");
    assert!(error.contains("at broken"), "{error}");
    let (_, error) = failure_of(json!({"script": "1 +\n\n)"})).await;
    assert!(
        error.starts_with("SyntaxError") && error.contains("line 3"),
        "{error}"
    );
    let (_, error) = failure_of(json!({"script": "throw {code: 7}"})).await;
    assert_eq!(error, "uncaught exception: {\"code\":7}");
    let (_, error) = failure_of(json!({"script": "return 5"})).await;
    assert!(error.contains("instead of `return value`"), "{error}");
}

#[tokio::test]
async fn cancellation_interrupts_a_running_loop() {
    let ctx = context();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.cancel();
    });
    let out = run_with(
        &ctx,
        json!({"script": "while (true) {}", "timeout_ms": 300000}),
    )
    .await;
    assert_eq!(out["error_kind"], "LOCAL_EXECUTOR_CANCELLED", "{out:#?}");
    assert_eq!(out["terminal"], true);
}

#[tokio::test]
async fn missing_script_is_invalid_input() {
    let registry = Registry::from_inventory_with(|_| true);
    let node = registry.get(ID).expect("registered");
    let err = node
        .run(&context(), Values::new())
        .await
        .expect_err("no script");
    assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(err.message.contains("script"));
    let err = node
        .run(
            &context(),
            json!({"script": "1\u{0}+1"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .await
        .expect_err("NUL");
    assert_eq!(err.kind.code(), "LOCAL_EXECUTOR_INVALID_INPUT");
    assert!(
        err.message.contains("NUL character at byte 1"),
        "{}",
        err.message
    );
}

#[test]
fn the_node_is_absent_unless_its_gate_is_set() {
    let without = Registry::from_inventory_with(|_| false);
    assert!(without.get(ID).is_none());
    assert!(matches!(
        without.lookup(ID),
        cheng_node::Lookup::Gated("CHENG_ENABLE_CODE_JS")
    ));
    let with = Registry::from_inventory_with(|var| var == "CHENG_ENABLE_CODE_JS");
    assert!(with.get(ID).is_some());
}
