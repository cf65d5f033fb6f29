//! The one way a run's connection is decided: ordered layers of host rules (the operator's, then
//! an author's, then what a person approved), each admitting the target by name before anything
//! is looked up, then one lookup ([`crate::resolve::lookup`]), then every layer checking every
//! address. The caller connects to exactly the addresses returned. `tools/web_fetch` and the
//! sandbox's filtering proxy both go through [`Gate::addresses`], so they cannot decide apart.

use crate::resolve;
use crate::rules::{Admitted, HostRules, Refusal};
use crate::{Host, Target};
use std::fmt;
use std::net::IpAddr;

/// One layer of host rules and who set it, for messages ("the operator's policy").
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    rules: HostRules,
    set_by: String,
}

/// Every layer a connection must pass, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gate {
    layers: Vec<Layer>,
}

/// Why a connection may not be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateError {
    /// A layer's rules refuse it; the text names the layer so the reader knows whom to ask.
    Refused { refusal: Refusal, set_by: String },
    /// The name could not be looked up.
    Lookup(String),
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateError::Refused { refusal, set_by } => {
                write!(f, "{refusal}; these rules are set by {set_by}")
            }
            GateError::Lookup(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for GateError {}

impl Gate {
    /// A gate with one more layer, checked after the others.
    pub fn with(mut self, rules: HostRules, set_by: impl Into<String>) -> Self {
        self.layers.push(Layer {
            rules,
            set_by: set_by.into(),
        });
        self
    }

    /// The check by name alone, before any lookup (what an approval card is checked against
    /// before anybody is asked).
    pub fn admit_by_name(&self, target: &Target) -> Result<(), GateError> {
        self.admitted(target).map(|_| ())
    }

    fn admitted(&self, target: &Target) -> Result<Vec<Admitted<'_>>, GateError> {
        // A gate with no rules at all lets nothing through (never everything).
        if self.layers.is_empty() {
            return Err(GateError::Refused {
                refusal: Refusal::NotAllowed {
                    target: target.clone(),
                },
                set_by: "nobody: there are no host rules here, so no host is allowed".into(),
            });
        }
        self.layers
            .iter()
            .map(|layer| {
                layer
                    .rules
                    .admit(target)
                    .map_err(|refusal| refused(layer, refusal))
            })
            .collect()
    }

    /// The addresses `target` may be connected to: admitted by name by every layer, looked up
    /// once, every address checked by every layer.
    pub async fn addresses(&self, target: &Target) -> Result<Vec<IpAddr>, GateError> {
        let admitted = self.admitted(target)?;
        let resolved = match &target.host {
            Host::Ip(ip) => vec![*ip],
            Host::Name(name) => resolve::lookup(name, target.port)
                .await
                .map_err(GateError::Lookup)?,
        };
        for (layer, admitted) in self.layers.iter().zip(&admitted) {
            admitted
                .addresses(&resolved)
                .map_err(|refusal| refused(layer, refusal))?;
        }
        Ok(resolved)
    }
}

fn refused(layer: &Layer, refusal: Refusal) -> GateError {
    GateError::Refused {
        refusal,
        set_by: layer.set_by.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HostPattern;

    fn rules(allow: &[&str], every_public_host: bool) -> HostRules {
        let allow = allow
            .iter()
            .map(|p| HostPattern::parse(p).unwrap())
            .collect();
        HostRules::new(allow, Vec::new(), every_public_host)
    }

    fn target(text: &str) -> Target {
        let (host, port) = text.rsplit_once(':').unwrap();
        Target::new(host, port.parse().unwrap()).unwrap()
    }

    #[test]
    fn every_layer_must_admit_and_the_refusal_names_its_layer() {
        let gate = Gate::default()
            .with(rules(&[], true), "the operator")
            .with(rules(&["pypi.org"], false), "the author");
        assert!(gate.admit_by_name(&target("pypi.org:443")).is_ok());
        let err = gate.admit_by_name(&target("example.com:443")).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("these rules are set by the author"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_address_target_is_checked_without_a_lookup() {
        let gate = Gate::default().with(rules(&[], true), "the operator");
        let err = gate.addresses(&target("127.0.0.1:80")).await.unwrap_err();
        assert!(
            matches!(
                err,
                GateError::Refused {
                    refusal: Refusal::Special { .. },
                    ..
                }
            ),
            "{err}"
        );
        let ok = Gate::default().with(rules(&["127.0.0.1"], false), "the operator");
        assert_eq!(
            ok.addresses(&target("127.0.0.1:80")).await.unwrap(),
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
    }

    #[tokio::test]
    async fn a_gate_without_rules_allows_nothing() {
        let err = Gate::default()
            .addresses(&target("203.0.113.7:443"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no host is allowed"), "{err}");
    }
}
