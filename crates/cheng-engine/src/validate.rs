//! Validation: every node against its spec, every edge against port types, cycles, gates.
//!
//! All problems are collected (a canvas shows them all at once). The work is linear in nodes +
//! edges + ports: ids are looked up in a hash map, never by scanning the node list.
//!
//! Decisions the format leaves open:
//! - An `llm` port set in `config` is allowed: it is the canvas author's default, and `inputs`
//!   (or an edge) override it.
//! - A port fed by an edge may not also be set literally in `inputs` (which one wins would be a
//!   guess); a value in `config` is fine, the edge overrides it. Two edges into one port are an error.
//! - `null` in `config` or `inputs` means "unset".

use crate::error::{did_you_mean, suggestions, ValidationError, ValidationErrorKind as Kind};
use crate::graph::{Edge, Graph, GraphNode};
use crate::ports::{check_value, edge_compatible};
use cheng_node::capability::Setting;
use cheng_node::check::{check_operator, is_capability, resolve_request, Place};
use cheng_node::engine_ports::EnginePort;
use cheng_node::policy::Policy;
use cheng_node::{Audience, Lookup, Node, NodeSpec, PortSpec, Registry, Values};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// A graph that passed validation: ready to run any number of times. Cheap to clone.
#[derive(Clone)]
pub struct ValidatedGraph {
    pub(crate) inner: Arc<Prepared>,
}

/// The validated graph's data, shared with the run's scheduling task.
pub(crate) struct Prepared {
    pub(crate) nodes: Vec<PreparedNode>,
    /// For each edge out of a node, the node it feeds (parallel edges appear once per edge).
    pub(crate) dependents: Vec<Vec<usize>>,
    /// For each node, how many edges it waits for.
    pub(crate) upstream_count: Vec<usize>,
    pub(crate) edge_count: usize,
    /// The operator's policy the graph was validated under (edges are checked against it too).
    pub(crate) policy: Arc<Policy>,
}

/// A node with its static input already assembled (defaults ← config ← inputs).
pub(crate) struct PreparedNode {
    pub id: String,
    pub node: Arc<dyn Node>,
    pub spec: &'static NodeSpec,
    pub base: Values,
    pub config: Values,
    pub incoming: Vec<Incoming>,
}

/// An edge into this node, resolved to indices.
pub(crate) struct Incoming {
    pub port: &'static PortSpec,
    pub from: usize,
    pub from_port: &'static str,
}

impl ValidatedGraph {
    pub fn len(&self) -> usize {
        self.inner.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.nodes.is_empty()
    }

    pub fn edge_count(&self) -> usize {
        self.inner.edge_count
    }

    /// Node ids in graph order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.inner.nodes.iter().map(|n| n.id.as_str())
    }

    /// Node `id` and the input `run` would hand it when no edge feeds it: defaults ← config ←
    /// inputs, `sandbox_root` set to `workspace` (the canonical root). For dry runs: a caller
    /// can ask `spec().effects.requires_approval` and build the approval card without running
    /// anything. `None` for an id the graph does not have.
    pub fn planned_input(
        &self,
        id: &str,
        workspace: &std::path::Path,
    ) -> Option<(Arc<dyn Node>, Values)> {
        let prepared = self.inner.nodes.iter().find(|n| n.id == id)?;
        let mut input = prepared.base.clone();
        // Validation refused specs with engine ports the engine does not fill, so this cannot fail.
        cheng_node::engine_ports::inject(prepared.spec, &mut input, workspace).ok()?;
        Some((Arc::clone(&prepared.node), input))
    }
}

impl ValidatedGraph {
    /// The one approval card running node `id` alone would ask about before it starts (its own
    /// card when its effects gate the input, capabilities left on "ask", host read paths), or
    /// `None` when it would start without asking. For servers that ask ahead of the run and dry
    /// runs; `Err` when the node refuses the input before anything could run.
    pub fn planned_card(
        &self,
        id: &str,
        ctx: &cheng_node::RunContext,
    ) -> Result<Option<cheng_node::ApprovalRequest>, cheng_node::NodeError> {
        let Some(prepared) = self.inner.nodes.iter().find(|n| n.id == id) else {
            return Err(cheng_node::NodeError::internal(format!(
                "the validated graph has no node `{id}`; this is a bug in cheng"
            )));
        };
        let Some((node, input)) = self.planned_input(id, &ctx.workspace) else {
            return Err(cheng_node::NodeError::internal(format!(
                "node `{id}` has no planned input; this is a bug in cheng"
            )));
        };
        let asked = cheng_node::check::asked_capabilities(
            &self.inner.policy,
            prepared.spec,
            &prepared.config,
            &input,
        );
        crate::approval::approval_card(node.as_ref(), ctx, &input, &asked)
    }
}

/// Validates `graph` against `registry`; every problem is reported.
pub fn validate(
    registry: &Registry,
    policy: &Arc<Policy>,
    graph: &Graph,
) -> Result<ValidatedGraph, Vec<ValidationError>> {
    let mut errors = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(graph.nodes.len());
    // `None` where the type is unknown: its ports cannot be checked, the type error says why.
    let mut resolved: Vec<Option<(&Arc<dyn Node>, Values)>> = Vec::with_capacity(graph.nodes.len());

    for (i, gnode) in graph.nodes.iter().enumerate() {
        if *index.entry(gnode.id.as_str()).or_insert(i) != i {
            errors.push(ValidationError::node(
                Kind::DuplicateNode,
                &gnode.id,
                "duplicate node id; every node in a graph needs its own id",
            ));
        }
        resolved.push(match registry.lookup(&gnode.node_type) {
            Lookup::Found(node) => {
                if let Some(source) = policy.disabled(&gnode.node_type) {
                    errors.push(ValidationError::node(
                        Kind::GatedType,
                        &gnode.id,
                        format!(
                            "{} is disabled by the operator's policy ({source}); ask the machine's operator, who can remove `disabled = true` there",
                            gnode.node_type
                        ),
                    ));
                }
                check_engine_ports(node.spec(), gnode, &mut errors);
                Some((node, static_input(node.spec(), policy, gnode, &mut errors)))
            }
            Lookup::Gated(var) => {
                errors.push(ValidationError::node(
                    Kind::GatedType,
                    &gnode.id,
                    format!("{} is disabled; set {var}=1 to enable it", gnode.node_type),
                ));
                None
            }
            Lookup::Unknown => {
                let close = suggestions(&gnode.node_type, registry.ids().into_iter());
                errors.push(ValidationError::node(
                    Kind::UnknownType,
                    &gnode.id,
                    format!("unknown node type `{}`.{} `cheng nodes` lists every type.", gnode.node_type, did_you_mean(&close)),
                ));
                None
            }
        });
    }

    let n = graph.nodes.len();
    let mut incoming: Vec<Vec<Incoming>> = (0..n).map(|_| Vec::new()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut upstream_count = vec![0usize; n];

    for edge in &graph.edges {
        let from = index.get(edge.from.node.as_str()).copied();
        let to = index.get(edge.to.node.as_str()).copied();
        for (end, side) in [(&edge.from, from), (&edge.to, to)] {
            if side.is_none() {
                let close = suggestions(&end.node, index.keys().copied());
                errors.push(ValidationError::graph(
                    Kind::DanglingEdge,
                    format!(
                        "edge {edge}: there is no node `{}`.{}",
                        end.node,
                        did_you_mean(&close)
                    ),
                ));
            }
        }
        let (Some(from), Some(to)) = (from, to) else {
            continue;
        };
        let from_spec = resolved[from].as_ref().map(|(node, _)| node.spec());
        let to_spec = resolved[to].as_ref().map(|(node, _)| node.spec());
        let out_port = from_spec.map(|spec| (spec, spec.output(&edge.from.port)));
        let in_port = to_spec.map(|spec| (spec, spec.input(&edge.to.port)));
        let mut ok = true;
        if let Some((spec, None)) = out_port {
            ok = false;
            let close = suggestions(&edge.from.port, spec.outputs.iter().map(|p| p.name));
            errors.push(ValidationError::port(
                Kind::DanglingEdge,
                &edge.from.node,
                &edge.from.port,
                format!(
                    "edge {edge}: {} has no output `{}`.{}",
                    spec.id,
                    edge.from.port,
                    did_you_mean(&close)
                ),
            ));
        }
        if let Some((spec, None)) = in_port {
            ok = false;
            let close = suggestions(
                &edge.to.port,
                spec.inputs
                    .iter()
                    .filter(|p| p.audience != Audience::Engine)
                    .map(|p| p.name),
            );
            errors.push(ValidationError::port(
                Kind::DanglingEdge,
                &edge.to.node,
                &edge.to.port,
                format!(
                    "edge {edge}: {} has no input `{}`.{}",
                    spec.id,
                    edge.to.port,
                    did_you_mean(&close)
                ),
            ));
        }
        if let (Some((_, Some(out))), Some((_, Some(inp)))) = (out_port, in_port) {
            ok &= check_edge_target(edge, out, inp, &graph.nodes[to], &mut errors);
            // `incoming` holds at most one edge per port, so this scan is bounded by the spec.
            if let Some(previous) = incoming[to].iter().find(|e| ok && e.port.name == inp.name) {
                ok = false;
                let previous = format!("{}.{}", graph.nodes[previous.from].id, previous.from_port);
                errors.push(ValidationError::port(
                    Kind::EdgeConflict,
                    &edge.to.node,
                    inp.name,
                    format!("fed by two edges ({previous} and {}); keep one", edge.from),
                ));
            }
            if ok {
                incoming[to].push(Incoming {
                    port: inp,
                    from,
                    from_port: out.name,
                });
            }
        }
        // Cycles are checked on every edge whose two nodes exist, whatever else is wrong with it.
        // Parallel edges count once per edge on both sides, which keeps the counts consistent.
        dependents[from].push(to);
        upstream_count[to] += 1;
    }

    // Ordering-only dependencies: scheduled and checked for cycles like edges, feeding no port.
    for (to, gnode) in graph.nodes.iter().enumerate() {
        for before in &gnode.after {
            match index.get(before.as_str()).copied() {
                Some(from) if from == to => {
                    errors.push(ValidationError::node(
                        Kind::Cycle,
                        &gnode.id,
                        "`after` names the node itself; remove it",
                    ));
                }
                Some(from) => {
                    dependents[from].push(to);
                    upstream_count[to] += 1;
                }
                None => {
                    let close = suggestions(before, index.keys().copied());
                    errors.push(ValidationError::node(
                        Kind::DanglingEdge,
                        &gnode.id,
                        format!(
                            "`after` names `{before}`, and there is no such node.{}",
                            did_you_mean(&close)
                        ),
                    ));
                }
            }
        }
    }

    for (i, (gnode, res)) in graph.nodes.iter().zip(&resolved).enumerate() {
        if let Some((node, base)) = res {
            check_required(node.spec(), gnode, base, &incoming[i], &mut errors);
        }
    }

    errors.extend(find_cycles(&graph.nodes, &dependents, &upstream_count));

    if !errors.is_empty() {
        return Err(errors);
    }
    let nodes = graph
        .nodes
        .iter()
        .zip(resolved)
        .zip(incoming)
        .filter_map(|((gnode, res), incoming)| {
            res.map(|(node, base)| PreparedNode {
                id: gnode.id.clone(),
                node: Arc::clone(node),
                spec: node.spec(),
                base,
                config: gnode.config.clone(),
                incoming,
            })
        })
        .collect();
    Ok(ValidatedGraph {
        inner: Arc::new(Prepared {
            nodes,
            dependents,
            upstream_count,
            edge_count: graph.edges.len(),
            policy: Arc::clone(policy),
        }),
    })
}

/// Defaults ← config ← inputs, checking each value. Every declared input is present in the
/// result (`null` when unset); engine ports are filled at run time.
fn static_input(
    spec: &'static NodeSpec,
    policy: &Policy,
    gnode: &GraphNode,
    errors: &mut Vec<ValidationError>,
) -> Values {
    let mut values = Values::new();
    for port in spec.inputs {
        // The operator's ceiling bounds defaults too (a 5000 ms default under a 1000 ms limit).
        let default =
            cheng_node::schema::effective_default(spec, port, policy).unwrap_or(Value::Null);
        values.insert(port.name.to_string(), default);
    }
    for (name, value) in &gnode.config {
        let Some(port) = known_port(spec, gnode, name, "config", errors) else {
            continue;
        };
        if port.audience == Audience::Engine {
            errors.push(engine_port_error(gnode, port, "config"));
            continue;
        }
        if value.is_null() {
            continue;
        }
        // A capability switch: the author's `true` / "ask" / `false`; only `true` turns it on.
        if is_capability(port) {
            match Setting::from_json(value) {
                Some(setting) => match check_operator(policy, spec.id, port, value, Place::Config) {
                    Ok(()) => {
                        values.insert(name.clone(), Value::Bool(setting == Setting::Grant));
                    }
                    Err(message) => errors.push(ValidationError::port(Kind::AboveCap, &gnode.id, port.name, message)),
                },
                None => errors.push(ValidationError::port(
                    Kind::WrongType,
                    &gnode.id,
                    port.name,
                    format!("{name} in the node's config must be true, \"ask\" or false, got {value} (in config)"),
                )),
            }
            continue;
        }
        match check_value(port, value) {
            Ok(()) => match check_operator(policy, spec.id, port, value, Place::Config) {
                Ok(()) => {
                    values.insert(name.clone(), value.clone());
                }
                Err(message) => errors.push(ValidationError::port(
                    Kind::AboveCap,
                    &gnode.id,
                    port.name,
                    message,
                )),
            },
            Err(message) => errors.push(value_error(gnode, port, "config", value, message)),
        }
    }
    for (name, value) in &gnode.inputs {
        let Some(port) = known_port(spec, gnode, name, "inputs", errors) else {
            continue;
        };
        match port.audience {
            Audience::Engine => {
                errors.push(engine_port_error(gnode, port, "inputs"));
                continue;
            }
            Audience::Author => {
                errors.push(ValidationError::port(
                    Kind::AuthorOnly,
                    &gnode.id,
                    port.name,
                    format!("{} is author-only; set it in the node's config", port.name),
                ));
                continue;
            }
            Audience::Llm | Audience::Capped => {}
        }
        if value.is_null() {
            continue;
        }
        if let Err(message) = check_value(port, value) {
            errors.push(value_error(gnode, port, "inputs", value, message));
            continue;
        }
        let resolved = if port.audience == Audience::Capped {
            resolve_request(policy, spec.id, port, gnode.config.get(port.name), value)
        } else {
            check_operator(policy, spec.id, port, value, Place::Inputs).map(|()| value.clone())
        };
        let value = match resolved {
            Ok(v) => v,
            Err(message) => {
                errors.push(ValidationError::port(
                    Kind::AboveCap,
                    &gnode.id,
                    port.name,
                    message,
                ));
                continue;
            }
        };
        values.insert(name.clone(), value);
    }
    values
}

/// A spec declaring an engine port the engine does not fill is refused: the node would
/// otherwise run with it silently unset.
fn check_engine_ports(
    spec: &'static NodeSpec,
    gnode: &GraphNode,
    errors: &mut Vec<ValidationError>,
) {
    for port in spec
        .inputs
        .iter()
        .filter(|p| p.audience == Audience::Engine)
    {
        if EnginePort::from_name(port.name).is_none() {
            errors.push(ValidationError::port(
                Kind::UnknownPort,
                &gnode.id,
                port.name,
                format!(
                    "{} declares engine port `{}`, which the engine does not fill; this is a bug in the node type, report it",
                    spec.id, port.name
                ),
            ));
        }
    }
}

fn known_port(
    spec: &'static NodeSpec,
    gnode: &GraphNode,
    name: &str,
    place: &str,
    errors: &mut Vec<ValidationError>,
) -> Option<&'static PortSpec> {
    let port = spec.input(name);
    if port.is_none() {
        let close = suggestions(
            name,
            spec.inputs
                .iter()
                .filter(|p| p.audience != Audience::Engine)
                .map(|p| p.name),
        );
        errors.push(ValidationError::port(
            Kind::UnknownPort,
            &gnode.id,
            name,
            format!(
                "{} has no input `{name}` (set in {place}).{}",
                spec.id,
                did_you_mean(&close)
            ),
        ));
    }
    port
}

fn engine_port_error(gnode: &GraphNode, port: &PortSpec, place: &str) -> ValidationError {
    ValidationError::port(
        Kind::EngineOnly,
        &gnode.id,
        port.name,
        format!(
            "{} is engine-injected (the engine sets it to the workspace root); remove it from {place}",
            port.name
        ),
    )
}

fn value_error(
    gnode: &GraphNode,
    port: &PortSpec,
    place: &str,
    value: &Value,
    message: String,
) -> ValidationError {
    let kind = if port.ty.accepts(value) {
        Kind::OutOfRange
    } else {
        Kind::WrongType
    };
    ValidationError::port(
        kind,
        &gnode.id,
        port.name,
        format!("{message} (in {place})"),
    )
}

/// Checks what an edge may feed; returns whether the edge is usable.
fn check_edge_target(
    edge: &Edge,
    out: &PortSpec,
    inp: &PortSpec,
    target: &GraphNode,
    errors: &mut Vec<ValidationError>,
) -> bool {
    let fail = |kind, message: String| ValidationError::port(kind, &target.id, inp.name, message);
    match inp.audience {
        Audience::Engine => {
            errors.push(fail(
                Kind::EngineOnly,
                format!(
                    "edge {edge}: {} is engine-injected; no edge may feed it",
                    inp.name
                ),
            ));
            return false;
        }
        Audience::Author => {
            errors.push(fail(
                Kind::AuthorOnly,
                format!("edge {edge}: {} is author-only; set it in the node's config, not through an edge", inp.name),
            ));
            return false;
        }
        Audience::Llm | Audience::Capped => {}
    }
    if !edge_compatible(&out.ty, &inp.ty) {
        errors.push(fail(
            Kind::EdgeTypeMismatch,
            format!(
                "edge {edge}: output `{}` is {} but input `{}` takes {}",
                out.name,
                out.ty.display(),
                inp.name,
                inp.ty.display()
            ),
        ));
        return false;
    }
    if target.inputs.get(inp.name).is_some_and(|v| !v.is_null()) {
        errors.push(fail(
            Kind::EdgeConflict,
            format!("set both in inputs and by edge {edge}; remove one (an edge overrides config, not inputs)"),
        ));
        return false;
    }
    true
}

fn check_required(
    spec: &NodeSpec,
    gnode: &GraphNode,
    base: &Values,
    incoming: &[Incoming],
    errors: &mut Vec<ValidationError>,
) {
    for port in spec
        .inputs
        .iter()
        .filter(|p| p.required && p.audience != Audience::Engine)
    {
        // A value given but refused (already reported) is not also "missing".
        let given = |values: &Values| values.get(port.name).is_some_and(|v| !v.is_null());
        let set = base.get(port.name).is_some_and(|v| !v.is_null())
            || given(&gnode.inputs)
            || given(&gnode.config);
        if !set && !incoming.iter().any(|e| e.port.name == port.name) {
            let place = if port.audience == Audience::Author {
                "config"
            } else {
                "inputs (or feed it by an edge)"
            };
            errors.push(ValidationError::port(
                Kind::MissingRequired,
                &gnode.id,
                port.name,
                match port.choices {
                    Some(choices) => format!(
                        "required input of {} is missing; set it in {place}, one of: {}",
                        spec.id,
                        choices.join(", ")
                    ),
                    None => format!(
                        "required input of {} is missing; set it in {place}",
                        spec.id
                    ),
                },
            ));
        }
    }
}

mod cycles;
use cycles::find_cycles;
