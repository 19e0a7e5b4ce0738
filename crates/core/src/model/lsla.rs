//! The general LSLA cost of an application mapped onto an architecture graph (Pelcat et al. 2018,
//! as restated in eq 1 of the LSLAG paper, seed 003).
//!
//! An architecture is a set of *processing elements* (PEs) and *communication nodes* (CNs), each
//! with an affine cost per token: a token of `q` quanta on element `e` costs
//! `cost_per_quantum_e * q + fixed_cost_e`. An application's activity is a list of tokens, each
//! mapped to one element; a token mapped to a PE is a processing token, one mapped to a CN a
//! communication token. The total cost is (eq 1)
//!
//! ```text
//! cost(A, P) = sum_{t in T_p} cost(t, map(t)) + lambda * sum_{t in T_c} cost(t, map(t))
//! ```
//!
//! where `lambda` converts communication cost units into processing cost units. A token with
//! `count = n` stands for `n` identical tokens (e.g. `n` firings of an actor).
//!
//! **Graph file** (TOML; `kerneltime lslag cost --graph FILE.toml`):
//!
//! ```toml
//! unit = "us"        # optional label of the cost unit, copied to the output
//! lambda = 1.0       # optional, 1 when absent (noted in the output)
//!
//! [[processing_element]]
//! name = "PE1"               # unique among all elements
//! cost_per_quantum = 0.004
//! fixed_cost = 0.0           # optional, 0 when absent
//!
//! [[communication_node]]
//! name = "CN"
//! cost_per_quantum = 0.068
//!
//! [[token]]
//! name = "io"                # unique among tokens
//! element = "PE1"            # the PE or CN the token is mapped to
//! quanta = 1024
//! count = 1                  # optional, 1 when absent
//! ```
//!
//! Every number must be finite and non-negative. Errors name the file and the token or element.
//!
//! What this module does NOT do: derive tokens from a dataflow graph (the mapping is given), model
//! contention or overlap, or fit the per-quantum costs (see `crate::fit`).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A processing element or communication node with an affine cost per token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Element {
    pub name: String,
    /// Cost of one quantum.
    pub cost_per_quantum: f64,
    /// Cost of a token regardless of its size.
    #[serde(default)]
    pub fixed_cost: f64,
}

/// A token (a unit of activity) of `quanta` quanta mapped to one element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Token {
    pub name: String,
    /// The name of the element the token is mapped to.
    pub element: String,
    pub quanta: f64,
    /// How many identical tokens this entry stands for.
    #[serde(default)]
    pub count: Option<u64>,
}

/// An architecture graph with an application's tokens mapped onto it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Graph {
    /// Label of the cost unit (time, energy, ...), copied to the output.
    #[serde(default)]
    pub unit: Option<String>,
    /// Communication-to-processing cost scale.
    #[serde(default)]
    pub lambda: Option<f64>,
    #[serde(default, rename = "processing_element")]
    pub processing_elements: Vec<Element>,
    #[serde(default, rename = "communication_node")]
    pub communication_nodes: Vec<Element>,
    #[serde(default, rename = "token")]
    pub tokens: Vec<Token>,
}

/// Whether an element processes or communicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Processing,
    Communication,
}

/// One token's cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TokenCost {
    pub name: String,
    pub element: String,
    pub kind: Kind,
    pub count: u64,
    /// `count * (cost_per_quantum * quanta + fixed_cost)`, before `lambda`.
    pub cost: f64,
}

/// One element's share.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ElementCostTotal {
    pub name: String,
    pub kind: Kind,
    pub tokens: u64,
    pub quanta: f64,
    /// Sum of its tokens' costs, before `lambda`.
    pub cost: f64,
}

/// The evaluated eq 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphCost {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    pub lambda: f64,
    /// Sum over processing tokens.
    pub processing_cost: f64,
    /// Sum over communication tokens, before `lambda`.
    pub communication_cost: f64,
    /// `processing_cost + lambda * communication_cost`.
    pub total_cost: f64,
    pub elements: Vec<ElementCostTotal>,
    pub tokens: Vec<TokenCost>,
    pub notes: Vec<String>,
}

/// The 1-based line of a byte offset in `text`.
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A TOML parse error as one line naming the position.
pub(crate) fn toml_error(text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(span) => format!("line {}: {}", line_of(text, span.start), e.message().trim()),
        None => e.message().trim().to_string(),
    }
}

impl Graph {
    /// Parses a graph file's text (schema in the module doc); `source` names the file in errors.
    pub fn from_toml_str(text: &str, source: &Path) -> Result<Self> {
        toml::from_str(text).map_err(|e| Error::file(source, toml_error(text, &e)))
    }

    /// Evaluates eq 1. Errors (naming the element or token) on duplicate names, a token mapped to
    /// an unknown element, or a negative or non-finite number.
    pub fn cost(&self) -> Result<GraphCost> {
        let mut notes = Vec::new();
        let lambda = match self.lambda {
            Some(l) => check_number("lambda", l)?,
            None => {
                notes.push("no lambda given; communication costs weighted by 1".to_string());
                1.0
            }
        };
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut elements: Vec<(&Element, Kind)> = Vec::new();
        for (list, kind, what) in [
            (
                &self.processing_elements,
                Kind::Processing,
                "processing_element",
            ),
            (
                &self.communication_nodes,
                Kind::Communication,
                "communication_node",
            ),
        ] {
            for e in list {
                let label = format!("{what} `{}`", e.name);
                if e.name.trim().is_empty() {
                    return Err(Error::invalid(what, "every element needs a non-empty name"));
                }
                check_number(&format!("{label}: cost_per_quantum"), e.cost_per_quantum)?;
                check_number(&format!("{label}: fixed_cost"), e.fixed_cost)?;
                if index.insert(e.name.as_str(), elements.len()).is_some() {
                    return Err(Error::invalid(
                        label,
                        "the name is used by another element; element names must be unique",
                    ));
                }
                elements.push((e, kind));
            }
        }
        if self.tokens.is_empty() {
            notes.push("the graph maps no tokens; its cost is 0".to_string());
        }
        let mut totals: Vec<ElementCostTotal> = elements
            .iter()
            .map(|(e, kind)| ElementCostTotal {
                name: e.name.clone(),
                kind: *kind,
                tokens: 0,
                quanta: 0.0,
                cost: 0.0,
            })
            .collect();
        let mut seen: HashMap<&str, ()> = HashMap::new();
        let mut tokens = Vec::with_capacity(self.tokens.len());
        let (mut processing_cost, mut communication_cost) = (0.0, 0.0);
        for t in &self.tokens {
            let label = format!("token `{}`", t.name);
            if seen.insert(t.name.as_str(), ()).is_some() {
                return Err(Error::invalid(
                    label,
                    "the name is used by another token; use `count` for repeated tokens",
                ));
            }
            check_number(&format!("{label}: quanta"), t.quanta)?;
            let &i = index.get(t.element.as_str()).ok_or_else(|| {
                let mut known: Vec<&str> = elements.iter().map(|(e, _)| e.name.as_str()).collect();
                known.sort_unstable();
                Error::invalid(
                    label.clone(),
                    format!(
                        "mapped to unknown element `{}`; known elements: {}",
                        t.element,
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    ),
                )
            })?;
            let (e, kind) = elements[i];
            let count = t.count.unwrap_or(1);
            let cost = count as f64 * (e.cost_per_quantum * t.quanta + e.fixed_cost);
            match kind {
                Kind::Processing => processing_cost += cost,
                Kind::Communication => communication_cost += cost,
            }
            totals[i].tokens += count;
            totals[i].quanta += count as f64 * t.quanta;
            totals[i].cost += cost;
            tokens.push(TokenCost {
                name: t.name.clone(),
                element: e.name.clone(),
                kind,
                count,
                cost,
            });
        }
        Ok(GraphCost {
            unit: self.unit.clone(),
            lambda,
            processing_cost,
            communication_cost,
            total_cost: processing_cost + lambda * communication_cost,
            elements: totals,
            tokens,
            notes,
        })
    }
}

fn check_number(name: &str, v: f64) -> Result<f64> {
    crate::error::non_negative(name, v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIG1: &str = r#"
        lambda = 2.0
        [[processing_element]]
        name = "PE1"
        cost_per_quantum = 0.5
        fixed_cost = 1.0
        [[processing_element]]
        name = "GPU"
        cost_per_quantum = 0.25
        [[communication_node]]
        name = "CN"
        cost_per_quantum = 0.1
        fixed_cost = 3.0
        [[token]]
        name = "io"
        element = "PE1"
        quanta = 10
        [[token]]
        name = "kernel"
        element = "GPU"
        quanta = 40
        count = 2
        [[token]]
        name = "fifo"
        element = "CN"
        quanta = 20
    "#;

    #[test]
    fn eq1_by_hand() {
        let g = Graph::from_toml_str(FIG1, "g.toml".as_ref()).unwrap();
        let c = g.cost().unwrap();
        // io: 0.5*10 + 1 = 6; kernel: 2 * (0.25*40 + 0) = 20; processing = 26.
        // fifo: 0.1*20 + 3 = 5; total = 26 + 2 * 5 = 36.
        assert!((c.processing_cost - 26.0).abs() < 1e-12);
        assert!((c.communication_cost - 5.0).abs() < 1e-12);
        assert!((c.total_cost - 36.0).abs() < 1e-12);
        assert_eq!(c.elements[1].tokens, 2);
        assert!((c.elements[1].quanta - 80.0).abs() < 1e-12);
        assert!(c.notes.is_empty());
    }

    #[test]
    fn errors_name_token_and_element() {
        let bad = FIG1.replace("element = \"CN\"", "element = \"CN2\"");
        let e = Graph::from_toml_str(&bad, "g.toml".as_ref())
            .unwrap()
            .cost()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("token `fifo`") && e.contains("CN2") && e.contains("PE1"),
            "{e}"
        );
        let bad = FIG1.replace("quanta = 10", "quanta = -10");
        let e = Graph::from_toml_str(&bad, "g.toml".as_ref())
            .unwrap()
            .cost()
            .unwrap_err()
            .to_string();
        assert!(e.contains("token `io`: quanta"), "{e}");
        let bad = FIG1.replace("name = \"GPU\"", "name = \"PE1\"");
        let e = Graph::from_toml_str(&bad, "g.toml".as_ref())
            .unwrap()
            .cost()
            .unwrap_err()
            .to_string();
        assert!(e.contains("processing_element `PE1`"), "{e}");
        let bad = FIG1.replace("quanta = 20", "quanta = 20\nweight = 1");
        let e = Graph::from_toml_str(&bad, "g.toml".as_ref())
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("g.toml: line ") && e.contains("weight"),
            "{e}"
        );
    }

    #[test]
    fn empty_graph_and_default_lambda() {
        let c = Graph::from_toml_str("", "e.toml".as_ref())
            .unwrap()
            .cost()
            .unwrap();
        assert_eq!(c.total_cost, 0.0);
        assert_eq!(c.lambda, 1.0);
        assert_eq!(c.notes.len(), 2);
    }
}
