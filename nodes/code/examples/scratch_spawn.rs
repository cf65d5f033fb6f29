use cheng_exec::sandbox::{Sandbox, SandboxRequest};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Instant;
fn med(v: &mut Vec<f64>) -> f64 { v.sort_by(|a,b| a.total_cmp(b)); v[v.len()/2] }
fn main() {
    cheng_exec::sandbox::init::run_if_requested();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().canonicalize().unwrap();
    let req = SandboxRequest::new(ws.clone(), vec!["/bin/sh".into(), "-c".into(), "true".into()]);
    let env = req.env.clone();
    let sb = Sandbox::prepare(req).unwrap();
    let (bwrap, args) = sb.command_line();
    let (bwrap, args) = (bwrap.to_path_buf(), args.to_vec());
    let limits = cheng_exec::limits::SandboxLimits::with_memory_mb(128).rlimits(true);
    let mut r: Vec<Vec<f64>> = vec![vec![]; 7];
    let ctx = cheng_node::RunContext::for_workspace("tools/code_shell", ws.clone(), cheng_node::Decision::Approved);
    let mut vals = serde_json::Map::new(); for p in cheng_node::Node::spec(&cheng_nodes_code::shell::CodeShell).inputs { if let Some(d) = p.default_value() { vals.insert(p.name.into(), d); } } vals.insert("script".into(), "true".into());
    let names = ["A posix_spawn null", "B fork(pre_exec) null", "C exec::run no rlimits", "D exec::run rlimits", "E posix_spawn piped", "F node", "G prepare+run"];
    for round in 0..100 {
        for k in 0..7 {
            let k = (k + round) % 7;
            let t = Instant::now();
            match k {
                0 => { Command::new(&bwrap).args(&args).env_clear().envs(env.iter().cloned()).stdin(Stdio::null()).stdout(Stdio::null()).status().unwrap(); }
                1 => { let mut c = Command::new(&bwrap); c.args(&args).env_clear().envs(env.iter().cloned()).stdin(Stdio::null()).stdout(Stdio::null()); unsafe { c.pre_exec(|| Ok(())); } c.status().unwrap(); }
                2 | 3 => {
                    let mut spec = cheng_exec::ProcessSpec::new(&bwrap, args.iter().cloned(), "/").env(env.clone());
                    if k == 3 { spec.rlimits = limits.clone(); }
                    let out = rt.block_on(cheng_exec::run(spec, &tokio_util_token()));
                    assert!(out.success(), "{out:?}");
                }
                5 => { let o = rt.block_on(cheng_node::Node::run(&cheng_nodes_code::shell::CodeShell, &ctx, vals.clone())).unwrap(); assert_eq!(o["success"], true); }
                6 => { let req = SandboxRequest::new(ws.clone(), vec!["/bin/sh".into(), "-c".into(), "true".into()]); let sb = Sandbox::prepare(req).unwrap(); let o = rt.block_on(sb.run(&tokio_util_token())).unwrap(); assert!(o.output.success()); }
                _ => { Command::new(&bwrap).args(&args).env_clear().envs(env.iter().cloned()).stdin(Stdio::null()).output().unwrap(); }
            }
            r[k].push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    for k in 0..7 { println!("{}: {:.2} ms", names[k], med(&mut r[k])); }
}
fn tokio_util_token() -> cheng_node::CancellationToken { cheng_node::CancellationToken::new() }
