//! The operator's policy in the CLI: loading it at startup (the machine policy
//! `/etc/cheng/policy.toml`, tightened by `--policy` or `$CHENG_POLICY`; built-in without either),
//! `cheng policy show`, and refusing `--approve` where the operator requires a person.

use crate::args::Command;
use crate::{complain, Exit};
use cheng_node::policy::Policy;
use cheng_node::Registry;
use std::path::Path;
use std::sync::Arc;

/// Every node type the policy may name: gated ones too (a policy may cover them in advance).
fn all_specs() -> Vec<&'static cheng_node::NodeSpec> {
    Registry::from_inventory_with(|_| true).specs().collect()
}

/// Loads the policy and checks the names it uses; the command is then run under it (every
/// engine it builds is given it). A bad policy, or a user policy that would loosen the
/// machine's, is a startup error (exit 2) naming the file and the key: never a silent default.
pub fn load(flag: Option<&Path>) -> Result<Arc<Policy>, Exit> {
    let loaded = Policy::load(flag).and_then(|p| p.check_names(all_specs()).map(|()| p));
    match loaded {
        Ok(p) => Ok(Arc::new(p)),
        Err(e) => {
            complain(e);
            Err(Exit::Usage)
        }
    }
}

/// `--approve` where the operator's policy sets `honour_approve_flag = false`: a usage error
/// before anything runs.
pub fn check_approve_flag(command: &Command, policy: &Policy) -> Result<(), Exit> {
    let approve = match command {
        Command::Run(run) => run.approval.approve,
        Command::Graph {
            command: crate::args::GraphCommand::Run(run),
        } => run.approval.approve,
        Command::Serve(serve) => serve.approval.approve,
        _ => false,
    };
    let (honoured, source) = policy.honour_approve_flag();
    if approve && !honoured {
        complain(format!(
            "--approve is not honoured on this machine: the operator's policy sets honour_approve_flag = false ({source}); \
             run on a terminal and answer the approval prompt, or ask the machine's operator"
        ));
        return Err(Exit::Usage);
    }
    Ok(())
}

/// `cheng policy show`: every node type, those gated off in this environment marked as such.
pub fn show(policy: &Policy) -> Exit {
    let registry = Registry::from_inventory();
    let gated_off = |spec: &cheng_node::NodeSpec| match registry.lookup(spec.id) {
        cheng_node::Lookup::Gated(var) => Some(var),
        _ => None,
    };
    crate::out::print(&policy.show_marking(all_specs(), gated_off))
}
