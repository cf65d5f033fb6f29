use std::time::Instant;
fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let n = 25;
    let mut a_s = Vec::new();
    let mut c_s = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        for _ in 0..n {
            let out = rt.block_on(cheng_exec::run(cheng_exec::ProcessSpec::new("true", Vec::<String>::new(), "/tmp"), &tokio_util::sync::CancellationToken::new()));
            assert!(out.success());
        }
        a_s.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
        let t = Instant::now();
        for _ in 0..n {
            std::process::Command::new("true").status().unwrap();
        }
        c_s.push(t.elapsed().as_secs_f64() * 1e6 / n as f64);
    }
    let r: Vec<f64> = a_s.iter().zip(&c_s).map(|(a, c)| a / c).collect();
    let med = |mut v: Vec<f64>| { v.sort_by(f64::total_cmp); v[v.len() / 2] };
    println!("run {:.0} µs, std status {:.0} µs, ratio {:.2}", med(a_s), med(c_s), med(r));
}
