// Linked so that their inventory registrations are present.
use cheng_nodes_code as _;
use cheng_nodes_documents as _;
use cheng_nodes_workspace as _;

fn main() {}
