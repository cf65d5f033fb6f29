//! Starting a `std::process::Command` in a session of its own.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes `cmd` start in a new session (setsid) so it has no controlling terminal: a program
/// that would ask on /dev/tty (cheng's approval prompt, ssh, sudo) finds none.
pub fn without_controlling_terminal(cmd: &mut Command) -> &mut Command {
    // SAFETY: setsid(2) is async-signal-safe and touches no memory of the parent; the closure
    // allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_leads_a_new_session() {
        // `exec` keeps the pid: awk prints its session id (field 6 of /proc/self/stat), which must
        // be its own pid.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo $$; exec awk '{print $6}' /proc/self/stat"]);
        let out = without_controlling_terminal(&mut cmd)
            .output()
            .expect("sh runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let fields: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(fields.len(), 2, "{text}");
        assert_eq!(
            fields[0], fields[1],
            "the child must lead its own session: {text}"
        );
    }
}
