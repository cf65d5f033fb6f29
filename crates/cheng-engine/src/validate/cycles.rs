//! Cycles in a graph's edges and `after` dependencies, each named by its nodes.

use super::*;

/// Names each cycle as `a → b → a`. Kahn's algorithm finds the nodes on or behind cycles; a walk
/// backwards through their remaining predecessors must revisit a node, which closes a cycle.
pub(super) fn find_cycles(
    nodes: &[GraphNode],
    dependents: &[Vec<usize>],
    upstream_count: &[usize],
) -> Vec<ValidationError> {
    let n = nodes.len();
    let mut remaining = upstream_count.to_vec();
    let mut queue: Vec<usize> = (0..n).filter(|&i| remaining[i] == 0).collect();
    let mut done = 0;
    while let Some(i) = queue.pop() {
        done += 1;
        for &d in &dependents[i] {
            remaining[d] -= 1;
            if remaining[d] == 0 {
                queue.push(d);
            }
        }
    }
    if done == n {
        return Vec::new();
    }
    // One remaining predecessor per remaining node is enough to walk backwards.
    let mut pred: Vec<Option<usize>> = vec![None; n];
    for (from, ds) in dependents.iter().enumerate() {
        if remaining[from] == 0 {
            continue;
        }
        for &d in ds {
            if remaining[d] > 0 && pred[d].is_none() {
                pred[d] = Some(from);
            }
        }
    }
    let mut errors = Vec::new();
    // 0 = unvisited, otherwise the walk number that visited it.
    let mut walk_of = vec![0usize; n];
    let mut walk = 0;
    for start in 0..n {
        if remaining[start] == 0 || walk_of[start] != 0 {
            continue;
        }
        walk += 1;
        let mut path = Vec::new();
        let mut at = start;
        while walk_of[at] == 0 {
            walk_of[at] = walk;
            path.push(at);
            match pred[at] {
                Some(p) => at = p,
                None => break,
            }
        }
        if walk_of[at] != walk {
            continue; // ran into an earlier walk: that cycle is already reported
        }
        let Some(pos) = path.iter().position(|&p| p == at) else {
            continue;
        };
        // `path` follows predecessors; reverse to read in edge direction.
        let mut cycle: Vec<&str> = path[pos..]
            .iter()
            .rev()
            .map(|&i| nodes[i].id.as_str())
            .collect();
        cycle.push(cycle[0]);
        errors.push(ValidationError::node(
            Kind::Cycle,
            cycle[0],
            format!("cycle: {}; a graph must be acyclic", cycle.join(" → ")),
        ));
    }
    errors
}
