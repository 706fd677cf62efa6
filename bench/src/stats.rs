//! The bench's statistics as pure functions: medians, the anchored schedule, window validity
//! and bounded retry, ratios, the control band, anchor drift and floor headroom.
//!
//! Nothing here measures or sleeps, so every rule the report relies on has a unit test on
//! synthetic inputs.

use serde::{Deserialize, Serialize};

/// The median of `xs` (mean of the two middle values for an even count); `None` when empty.
/// NaNs are not expected (rates come from counts over positive durations) and sort last.
pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// The geometric mean of `xs`: the mean of ratios across shapes of unlike sizes. `None` when
/// empty or when any value is not positive.
pub(crate) fn geomean(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| *x <= 0.0) {
        return None;
    }
    Some((xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len() as f64).exp())
}

/// One measured window of one gateway run: a fixed request count driven after the warm-up.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    pub requests: u64,
    pub(crate) failed: u64,
    pub(crate) elapsed_s: f64,
    /// Gateway CPU time (user + system, all threads) spent during the window.
    pub(crate) cpu_s: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
}

impl Window {
    /// A window counts only if every request succeeded: a failed request is fast (an error
    /// page), so a window with failures would flatter the variant that fails.
    pub(crate) fn is_valid(&self) -> bool {
        self.failed == 0 && self.requests > 0 && self.elapsed_s > 0.0
    }

    pub(crate) fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed_s.max(1e-9)
    }

    /// Gateway CPU microseconds per request.
    pub(crate) fn cpu_us_per_request(&self) -> f64 {
        self.cpu_s * 1e6 / (self.requests.max(1) as f64)
    }
}

/// What to do after a window attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// The window is valid: keep it and go on.
    Keep,
    /// Invalid: it is recorded, and the window is run again.
    Retry,
    /// Invalid and the retries are spent: the slot stays without a valid window.
    GiveUp,
}

/// The bounded retry rule for one window slot. `attempt` counts from 0; at most
/// `max_retries` extra attempts follow the first.
pub(crate) fn next_step(attempt: u32, valid: bool, max_retries: u32) -> Step {
    if valid {
        Step::Keep
    } else if attempt < max_retries {
        Step::Retry
    } else {
        Step::GiveUp
    }
}

/// One gateway run in the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Slot {
    /// Index into the variant list; 0 is the baseline.
    pub variant: usize,
    /// `None` for the front and back anchors.
    pub round: Option<u32>,
    pub(crate) kind: SlotKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum SlotKind {
    Front,
    Round,
    Back,
}

/// The anchored, interleaved order of gateway runs: the baseline (variant 0) first, then
/// `rounds` rounds in which every variant runs once, the order rotated by one each round so
/// no variant always runs right after another (warm caches, thermal state, a neighbour's
/// burst), then the baseline last. Front and back anchors give the drift over the session.
pub(crate) fn schedule(variants: usize, rounds: u32) -> Vec<Slot> {
    let mut out = Vec::new();
    if variants == 0 {
        return out;
    }
    out.push(Slot {
        variant: 0,
        round: None,
        kind: SlotKind::Front,
    });
    for r in 0..rounds {
        for i in 0..variants {
            out.push(Slot {
                variant: (i + r as usize) % variants,
                round: Some(r),
                kind: SlotKind::Round,
            });
        }
    }
    out.push(Slot {
        variant: 0,
        round: None,
        kind: SlotKind::Back,
    });
    out
}

/// `a / b`, or `None` when `b` is not a positive number.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

/// The noise band: the range the control (the baseline against an identical copy of itself)
/// spans, over its per-round ratios and its overall ratio, always including 1.00. A variant's
/// ratio outside this range is a difference this session could tell from noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Band {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
}

impl Band {
    /// `None` when the control has no ratio at all (no valid window in any round).
    pub(crate) fn from_control(ratios: &[f64]) -> Option<Band> {
        let finite: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite()).collect();
        if finite.is_empty() {
            return None;
        }
        let lo = finite.iter().copied().fold(1.0, f64::min);
        let hi = finite.iter().copied().fold(1.0, f64::max);
        Some(Band { lo, hi })
    }

    pub(crate) fn classify(&self, ratio: f64) -> Verdict {
        if ratio > self.hi {
            Verdict::Above
        } else if ratio < self.lo {
            Verdict::Below
        } else {
            Verdict::WithinNoise
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Above,
    Below,
    WithinNoise,
}

/// Relative change from the front anchor to the back anchor (`0.03` = the baseline got 3%
/// faster over the session); `None` without both anchors.
pub fn drift(front: Option<f64>, back: Option<f64>) -> Option<f64> {
    Some(ratio(back?, front?)? - 1.0)
}

/// The smallest mock-to-gateway rate ratio that lets the bench claim it measured the gateway:
/// below it, the client and mock (same machine, same client code) may be what limits.
pub(crate) const MIN_FLOOR_HEADROOM: f64 = 2.0;

/// The mock's rate driven directly over the best gateway rate; `None` without both.
pub fn headroom(mock_rate: Option<f64>, best_gateway_rate: Option<f64>) -> Option<f64> {
    ratio(mock_rate?, best_gateway_rate?)
}

/// Summary of one variant's valid windows.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub valid_windows: usize,
    pub invalid_windows: usize,
    pub median_rps: Option<f64>,
    pub(crate) p50_ms: Option<f64>,
    pub(crate) p99_ms: Option<f64>,
    pub(crate) cpu_us_per_request: Option<f64>,
}

/// Medians over the valid windows; invalid ones are only counted.
pub(crate) fn summarize(windows: &[Window]) -> Summary {
    let valid: Vec<&Window> = windows.iter().filter(|w| w.is_valid()).collect();
    let med = |f: fn(&Window) -> f64| median(&valid.iter().map(|w| f(w)).collect::<Vec<_>>());
    Summary {
        valid_windows: valid.len(),
        invalid_windows: windows.len() - valid.len(),
        median_rps: med(Window::rate),
        p50_ms: med(|w| w.p50_ms),
        p99_ms: med(|w| w.p99_ms),
        cpu_us_per_request: med(Window::cpu_us_per_request),
    }
}

/// Per-round ratios of a variant's median rate to the baseline's median rate in the same
/// round; rounds where either has no valid window are skipped.
pub fn paired_ratios(variant: &[Vec<Window>], baseline: &[Vec<Window>]) -> Vec<f64> {
    variant
        .iter()
        .zip(baseline)
        .filter_map(|(v, b)| ratio(summarize(v).median_rps?, summarize(b).median_rps?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_of_ratios() {
        assert_eq!(geomean(&[]), None);
        assert_eq!(geomean(&[1.0, 0.0]), None);
        assert!((geomean(&[0.5, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((geomean(&[4.0, 1.0]).unwrap() - 2.0).abs() < 1e-12);
    }

    fn w(requests: u64, failed: u64, elapsed_s: f64) -> Window {
        Window {
            requests,
            failed,
            elapsed_s,
            cpu_s: elapsed_s / 2.0,
            p50_ms: 1.0,
            p99_ms: 2.0,
        }
    }

    #[test]
    fn medians_odd_even_empty() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0]), Some(3.0));
        assert_eq!(median(&[5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        // An outlier moves a mean, not a median.
        assert_eq!(median(&[100.0, 101.0, 99.0, 1.0, 1e9]), Some(100.0));
    }

    #[test]
    fn windows_with_failures_are_invalid() {
        assert!(w(100, 0, 1.0).is_valid());
        assert!(!w(100, 1, 1.0).is_valid());
        assert!(!w(0, 0, 1.0).is_valid());
        assert!(!w(100, 0, 0.0).is_valid());
        assert_eq!(w(100, 0, 0.5).rate(), 200.0);
        assert_eq!(w(100, 0, 1.0).cpu_us_per_request(), 5000.0);
    }

    #[test]
    fn retry_is_bounded() {
        assert_eq!(next_step(0, true, 2), Step::Keep);
        assert_eq!(next_step(0, false, 2), Step::Retry);
        assert_eq!(next_step(1, false, 2), Step::Retry);
        assert_eq!(next_step(2, false, 2), Step::GiveUp);
        assert_eq!(next_step(2, true, 2), Step::Keep);
        assert_eq!(next_step(0, false, 0), Step::GiveUp);
        // Simulate a slot that fails three times then succeeds, with two retries allowed.
        let outcomes = [false, false, false, true];
        let mut attempts = 0;
        let last = loop {
            match next_step(attempts, outcomes[attempts as usize], 2) {
                Step::Retry => attempts += 1,
                s => break s,
            }
        };
        assert_eq!((last, attempts), (Step::GiveUp, 2));
    }

    #[test]
    fn summary_uses_valid_windows_only() {
        let s = summarize(&[
            w(100, 0, 1.0),
            w(100, 5, 0.01),
            w(100, 0, 0.5),
            w(100, 0, 0.25),
        ]);
        assert_eq!(s.valid_windows, 3);
        assert_eq!(s.invalid_windows, 1);
        assert_eq!(s.median_rps, Some(200.0));
        assert_eq!(s.p50_ms, Some(1.0));
        let none = summarize(&[w(100, 1, 1.0)]);
        assert_eq!(none.median_rps, None);
        assert_eq!(none.invalid_windows, 1);
    }

    #[test]
    fn schedule_is_anchored_and_rotated() {
        let s = schedule(3, 2);
        let order: Vec<usize> = s.iter().map(|x| x.variant).collect();
        assert_eq!(order, vec![0, 0, 1, 2, 1, 2, 0, 0]);
        assert_eq!(s.first().unwrap().kind, SlotKind::Front);
        assert_eq!(s.last().unwrap().kind, SlotKind::Back);
        assert_eq!(s[1].round, Some(0));
        assert_eq!(s[6].round, Some(1));
        // Every variant runs once per round.
        for r in 0..2 {
            let mut in_round: Vec<usize> = s
                .iter()
                .filter(|x| x.round == Some(r))
                .map(|x| x.variant)
                .collect();
            in_round.sort();
            assert_eq!(in_round, vec![0, 1, 2]);
        }
        assert_eq!(schedule(1, 0).len(), 2);
        assert!(schedule(0, 3).is_empty());
    }

    #[test]
    fn control_band_includes_one_and_classifies() {
        let b = Band::from_control(&[0.97, 1.02, 0.99]).unwrap();
        assert_eq!((b.lo, b.hi), (0.97, 1.02));
        assert!(((b.hi - b.lo) / 2.0 - 0.025).abs() < 1e-12);
        assert_eq!(b.classify(1.10), Verdict::Above);
        assert_eq!(b.classify(1.01), Verdict::WithinNoise);
        assert_eq!(b.classify(0.90), Verdict::Below);
        // A control that is always a bit fast still brackets 1.00.
        let b = Band::from_control(&[1.03, 1.05]).unwrap();
        assert_eq!((b.lo, b.hi), (1.0, 1.05));
        assert_eq!(Band::from_control(&[]), None);
        assert_eq!(Band::from_control(&[f64::NAN]), None);
    }

    #[test]
    fn drift_and_headroom() {
        assert!((drift(Some(100.0), Some(103.0)).unwrap() - 0.03).abs() < 1e-12);
        assert!((drift(Some(100.0), Some(95.0)).unwrap() + 0.05).abs() < 1e-12);
        assert_eq!(drift(None, Some(1.0)), None);
        assert_eq!(drift(Some(0.0), Some(1.0)), None);
        assert_eq!(headroom(Some(50_000.0), Some(20_000.0)), Some(2.5));
        assert_eq!(headroom(None, Some(1.0)), None);
        assert!(headroom(Some(30_000.0), Some(20_000.0)).unwrap() < MIN_FLOOR_HEADROOM);
    }

    #[test]
    fn paired_ratios_skip_empty_rounds() {
        let base = vec![vec![w(100, 0, 1.0)], vec![w(100, 0, 1.0)], vec![]];
        let var = vec![
            vec![w(100, 0, 0.5)],
            vec![w(100, 1, 0.5)],
            vec![w(100, 0, 1.0)],
        ];
        assert_eq!(paired_ratios(&var, &base), vec![2.0]);
    }
}
