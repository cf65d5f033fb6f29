//! Killing a child's whole process group.
//!
//! Every child leads its own process group (`process_group(0)`), so signalling `-pgid` reaches
//! the grandchildren a script put in the background too. (The per-run reaper, `crate::reaper`,
//! carries the sequence out for [`crate::run`] and also kills what left the group.) The sequence on timeout or
//! cancellation is SIGTERM to the group, a grace period for the leader to exit, then SIGKILL to
//! the group. After the leader exits (normally or not) the rest of the group is SIGKILLed while
//! the leader is still an unreaped zombie: the zombie keeps the group id from being reused, so
//! the signal can never reach an unrelated process.

use std::io;

/// Sends `signal` to every process in the group `pgid`. A group that is already gone is fine.
pub fn signal_group(pgid: i32, signal: i32) -> io::Result<()> {
    if pgid <= 1 {
        // kill(-1) and kill(0) would reach far more than one group.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    let (Some(group), Some(signal)) = (
        rustix::process::Pid::from_raw(pgid),
        rustix::process::Signal::from_named_raw(signal),
    ) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot send signal {signal} to process group {pgid}"),
        ));
    };
    let Err(err) = rustix::process::kill_process_group(group, signal) else {
        return Ok(());
    };
    let err = io::Error::from(err);
    if err.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(err)
    }
}

/// Process ids (from /proc) whose process group is `pgid`, zombies excluded.
///
/// Used by tests and diagnostics to prove nothing was left behind.
pub fn live_group_members(pgid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parse_state_and_pgrp(&stat))
                .is_some_and(|(state, pgrp)| pgrp == pgid && state != 'Z' && state != 'X')
        })
        .collect()
}

/// `(state, pgrp)` from a /proc/<pid>/stat line. The command name may contain spaces and
/// parentheses, so parse after its last `)`.
fn parse_state_and_pgrp(stat: &str) -> Option<(char, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_group_zero_and_one() {
        assert!(signal_group(0, libc::SIGTERM).is_err());
        assert!(signal_group(1, libc::SIGTERM).is_err());
        assert!(signal_group(-5, libc::SIGTERM).is_err());
    }

    #[test]
    fn a_missing_group_is_not_an_error() {
        // pid_max is far below this, so no such group can exist.
        assert!(signal_group(i32::MAX - 7, libc::SIGTERM).is_ok());
    }

    #[test]
    fn parses_stat_lines_with_odd_names() {
        assert_eq!(
            parse_state_and_pgrp("42 (a) b (c)) S 1 42 42 0"),
            Some(('S', 42))
        );
        assert_eq!(parse_state_and_pgrp("garbage"), None);
    }

    #[test]
    fn finds_its_own_group() {
        let pgid = rustix::process::getpgrp().as_raw_nonzero().get();
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert!(live_group_members(pgid).contains(&me));
    }
}
