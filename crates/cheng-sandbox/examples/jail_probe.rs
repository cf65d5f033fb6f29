//! Performs one attack from inside the worker jail (`cheng_sandbox::jail`) and prints
//! whether the system let it through: `jail_probe [--without-jail | --filesystem-only] ATTACK` with ATTACK one of
//! `open` (read /etc/passwd), `list` (list /), `socket` (a UDP socket on loopback), `fork`,
//! `exec` (run /bin/true), `write PATH`. Prints `jail: LAYER` for each layer, then `allowed` or
//! `refused: ERROR`. The jail's tests (tests/suite/jail.rs) run it; `--without-jail` is their
//! positive control, `--filesystem-only` shows the filesystem layer holds on its own.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let jailed = !args.iter().any(|a| a == "--without-jail");
    let filesystem_only = args.iter().any(|a| a == "--filesystem-only");
    let Some(attack) = args.iter().find(|a| !a.starts_with("--")) else {
        eprintln!("usage: jail_probe [--without-jail] open|list|socket|fork|exec");
        std::process::exit(2);
    };
    if jailed {
        let entered = if filesystem_only {
            cheng_sandbox::jail::filesystem().map(|layer| vec![layer])
        } else {
            cheng_sandbox::jail::enter()
        };
        match entered {
            Ok(layers) => {
                for layer in layers {
                    println!("jail: {layer}");
                }
            }
            Err(e) => {
                println!("unavailable: {e}");
                std::process::exit(3);
            }
        }
    }
    let outcome: Result<(), String> = match attack.as_str() {
        "open" => std::fs::read("/etc/passwd")
            .map(|_| ())
            .map_err(|e| e.to_string()),
        "list" => std::fs::read_dir("/")
            .map_err(|e| e.to_string())
            .and_then(|mut d| match d.next() {
                Some(_) => Ok(()),
                None => Err("/ is empty".to_string()),
            }),
        "socket" => std::net::UdpSocket::bind("127.0.0.1:0")
            .map(|_| ())
            .map_err(|e| e.to_string()),
        "fork" => {
            // SAFETY: the child only exits at once (no allocation, no locks).
            let pid = unsafe { libc::fork() };
            match pid {
                -1 => Err(std::io::Error::last_os_error().to_string()),
                0 => {
                    // SAFETY: _exit ends the child without running any destructor.
                    unsafe { libc::_exit(0) }
                }
                _ => Ok(()),
            }
        }
        "write" => match args.iter().filter(|a| !a.starts_with("--")).nth(1) {
            Some(path) => std::fs::write(path, "written from the jail").map_err(|e| e.to_string()),
            None => Err("write needs a path".to_string()),
        },
        "exec" => std::process::Command::new("/bin/true")
            .status()
            .map(|_| ())
            .map_err(|e| e.to_string()),
        other => Err(format!("unknown attack {other}")),
    };
    match outcome {
        Ok(()) => println!("allowed"),
        Err(e) => println!("refused: {e}"),
    }
}
