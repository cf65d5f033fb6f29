use std::time::Instant;
fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let n = 300;
    for round in 0..3 {
        let t = Instant::now();
        for _ in 0..n {
            let out = rt.block_on(cheng_exec::run(cheng_exec::ProcessSpec::new("true", Vec::<String>::new(), "/tmp"), &tokio_util::sync::CancellationToken::new()));
            assert!(out.success());
        }
        let a = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            unsafe {
                let pid = libc::fork();
                if pid == 0 { libc::_exit(0); }
                let mut st = 0;
                libc::waitpid(pid, &mut st, 0);
            }
        }
        let b = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for _ in 0..n {
            std::process::Command::new("true").status().unwrap();
        }
        let c = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("round {round}: run {a:.0} µs, fork+exit+wait {b:.0} µs, std status {c:.0} µs");
    }
}
