//! The holdout gate: on the one shape that never trains, every optimized variant's
//! instructions per request (callgrind, marginal) must be at most `max_ratio` x the baseline's
//! (1.00 by default). Instructions, not throughput, because on these 2-core VMs throughput
//! moves +-5-10% between identical binaries while callgrind counts repeat to +-0.03%.

use serde::{Deserialize, Serialize};

use crate::callgrind::CallgrindReport;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct GateLine {
    pub variant: String,
    pub(crate) ir_per_request: f64,
    pub ratio: f64,
    pub pass: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct GateResult {
    pub shape: String,
    pub(crate) baseline: String,
    pub(crate) max_ratio: f64,
    pub(crate) lines: Vec<GateLine>,
    pub pass: bool,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum GateError {
    #[error("holdout gate: variant {0} has no instruction count")]
    Missing(String),
    #[error("holdout gate: nothing to compare (need a baseline and at least one variant)")]
    Nothing,
}

/// Applies the gate to a callgrind report whose first variant is the baseline.
pub(crate) fn gate(report: &CallgrindReport, max_ratio: f64) -> Result<GateResult, GateError> {
    let Some((base, rest)) = report.variants.split_first() else {
        return Err(GateError::Nothing);
    };
    if rest.is_empty() {
        return Err(GateError::Nothing);
    }
    let base_ir = *base
        .per_request
        .get("Ir")
        .filter(|x| **x > 0.0)
        .ok_or_else(|| GateError::Missing(base.name.clone()))?;
    let mut lines = Vec::new();
    for v in rest {
        let ir = *v
            .per_request
            .get("Ir")
            .ok_or_else(|| GateError::Missing(v.name.clone()))?;
        let ratio = ir / base_ir;
        lines.push(GateLine {
            variant: v.name.clone(),
            ir_per_request: ir,
            ratio,
            pass: ratio <= max_ratio,
        });
    }
    Ok(GateResult {
        shape: report.shape.clone(),
        baseline: base.name.clone(),
        max_ratio,
        pass: lines.iter().all(|l| l.pass),
        lines,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(irs: &[(&str, f64)]) -> CallgrindReport {
        crate::callgrind::report_of("responses-stream-mid", irs)
    }

    #[test]
    fn passes_when_not_worse() {
        let g = gate(
            &report(&[("plain", 100.0), ("pgo", 92.0), ("pgo-bolt", 100.0)]),
            1.0,
        )
        .unwrap();
        assert!(g.pass);
        assert_eq!(g.lines.len(), 2);
        assert_eq!(g.lines[0].ratio, 0.92);
    }

    #[test]
    fn fails_when_one_variant_is_worse() {
        let g = gate(
            &report(&[("plain", 100.0), ("pgo", 92.0), ("pgo-bolt", 100.5)]),
            1.0,
        )
        .unwrap();
        assert!(!g.pass);
        assert!(g.lines[0].pass);
        assert!(!g.lines[1].pass);
        // A tolerance, when given, is explicit.
        assert!(
            gate(&report(&[("plain", 100.0), ("pgo-bolt", 100.5)]), 1.01)
                .unwrap()
                .pass
        );
    }

    #[test]
    fn refuses_to_pass_on_nothing() {
        assert!(gate(&report(&[]), 1.0).is_err());
        assert!(gate(&report(&[("plain", 100.0)]), 1.0).is_err());
        assert!(gate(&report(&[("plain", 0.0), ("pgo", 0.0)]), 1.0).is_err());
    }
}
