//! What an approval card was computed from, checked again by `run` under the workspace lock.
//!
//! The engine takes the workspace's lock only once a card is decided, so between the card and
//! the run another writer may change a file the card showed (another approved write that got
//! there first, or a change outside cheng with the freshness gate off). Every file node's card
//! carries its basis (`ApprovalRequest::basis`): one line per path it read, with what was there.
//! `run` reads the files again under the lock and refuses when its basis is not the approved
//! one, so what is written is what the card showed.

use cheng_node::{ErrorKind, NodeError, RunContext};

/// One line of a basis: `path<TAB>what` (`what`: a content tag and size, `absent`, ...).
pub fn line(display: &str, what: &str) -> String {
    format!("{display}\t{what}\n")
}

/// The line for a file about to be written: its tag and size now, or `absent`.
pub fn file(display: &str, now: Option<(&str, usize)>) -> String {
    match now {
        Some((tag, bytes)) => line(display, &format!("{tag} {bytes} B")),
        None => line(display, "absent"),
    }
}

/// Refuses, naming the path, when the card approved for this run was computed from something
/// else than `now` (a run without an approved card has nothing to compare).
pub fn check(ctx: &RunContext, now: &str) -> Result<(), NodeError> {
    let Some(approved) = ctx.approved_card.as_ref().and_then(|c| c.basis.as_deref()) else {
        return Ok(());
    };
    if approved == now {
        return Ok(());
    }
    let path = |line: &str| line.rsplit_once('\t').map_or(line, |(p, _)| p).to_string();
    let mut approved_lines = approved.lines();
    let mut now_lines = now.lines();
    let what = loop {
        match (approved_lines.next(), now_lines.next()) {
            (Some(a), Some(n)) if a == n => continue,
            (Some(a), _) => break path(a),
            (None, Some(n)) => break path(n),
            (None, None) => break "a file of the change".to_string(),
        }
    };
    Err(NodeError::new(
        ErrorKind::FileChanged,
        format!(
            "{what} changed since it was approved, so the approved change is not what would be \
             written; nothing was written: read it again and make the change anew"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cheng_node::{ApprovalRequest, Decision};
    use std::sync::Arc;

    fn approved(basis: Option<&str>) -> RunContext {
        let mut ctx =
            RunContext::for_workspace("tools/write_file", "/ws".into(), Decision::Approved);
        let mut card = ApprovalRequest::new(&ctx, "write_file: write a.txt".into());
        card.basis = basis.map(str::to_string);
        ctx.approved_card = Some(Arc::new(card));
        ctx
    }

    #[test]
    fn a_different_basis_is_refused_naming_the_path() {
        let shown = file("a.txt", Some(("4F9F2CAB", 5))) + &file("b.txt", None);
        let ctx = approved(Some(&shown));
        assert!(check(&ctx, &shown).is_ok());
        let now = file("a.txt", Some(("4F9F2CAB", 5))) + &file("b.txt", Some(("E40C292C", 1)));
        let err = check(&ctx, &now).unwrap_err();
        assert_eq!(err.kind, ErrorKind::FileChanged);
        assert!(
            err.message
                .starts_with("b.txt changed since it was approved")
                && err.message.contains("nothing was written"),
            "{}",
            err.message
        );
        // No approved card (a direct call) or a card without a basis: nothing to compare.
        let direct =
            RunContext::for_workspace("tools/write_file", "/ws".into(), Decision::Approved);
        assert!(check(&direct, &now).is_ok());
        assert!(check(&approved(None), &now).is_ok());
    }
}
