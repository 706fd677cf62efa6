//! Where a request's CPU goes: the gateway's user CPU (its own code, which PGO and BOLT can
//! reach) beside its kernel CPU (system calls and loopback TCP, which no compiler
//! optimization reaches), per variant, and what PGO and BOLT are worth on each part.
//!
//! Both parts come from the same two reads of /proc/PID/stat (utime, stime) around the
//! c=`cpu_concurrency` sweep step, so they add up to the main table's CPU per request.

use std::fmt::Write as _;

use super::worth::{cell, measured_pairs, paired};
use super::{raw, BoardReport};

fn median(r: &BoardReport, key: &str, variant: &str) -> Option<f64> {
    r.rows
        .iter()
        .find(|row| row.metric.key == key)?
        .cells
        .iter()
        .find(|c| c.variant == variant)?
        .median
}

fn band(r: &BoardReport, key: &str) -> String {
    r.rows
        .iter()
        .find(|row| row.metric.key == key)
        .and_then(|row| row.band)
        .map_or("-".into(), |b| format!("{:.3}..{:.3}", b.lo, b.hi))
}

/// The user part's share of the baseline's CPU per request; `None` unless both parts were
/// measured.
pub fn user_share(r: &BoardReport) -> Option<f64> {
    let u = median(r, raw::CPU_USER, &r.baseline)?;
    let k = median(r, raw::CPU_SYS, &r.baseline)?;
    (u + k > 0.0).then(|| u / (u + k))
}

/// The section: empty when no leg measured the split (results from before it existed).
pub fn markdown(r: &BoardReport) -> String {
    let mut s = String::new();
    let names: Vec<&str> = r.variants.iter().map(|(n, _)| n.as_str()).collect();
    if !names.iter().any(|n| median(r, raw::CPU_USER, n).is_some()) {
        return s;
    }
    let c = r.rig.cpu_concurrency;
    let _ = writeln!(
        s,
        "\n**Where a request's CPU goes** (the gateway's utime and stime from /proc/PID/stat, \
         read before and after the c={c} sweep step, per request; medians over rounds; the \
         control band is the control's ratio range of each part, as in the table above):\n"
    );
    s.push_str(
        "| variant | user us/req | kernel us/req | user + kernel | user share |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    let f = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.1}"));
    for n in &names {
        let u = median(r, raw::CPU_USER, n);
        let k = median(r, raw::CPU_SYS, n);
        let share = u
            .zip(k)
            .filter(|(u, k)| u + k > 0.0)
            .map_or("-".into(), |(u, k)| format!("{:.0} %", 100.0 * u / (u + k)));
        let _ = writeln!(
            s,
            "| {n} | {} | {} | {} | {share} |",
            f(u),
            f(k),
            f(u.zip(k).map(|(u, k)| u + k))
        );
    }
    let _ = writeln!(
        s,
        "| control band | {} | {} | {} | |",
        band(r, raw::CPU_USER),
        band(r, raw::CPU_SYS),
        band(r, raw::CPU)
    );
    if let Some(share) = user_share(r) {
        let _ = writeln!(
            s,
            "\nCompiler optimization (PGO, BOLT) reaches the user part only: **{:.0} % of {}'s \
             CPU per request**. The kernel part (reading and writing two loopback TCP sockets, \
             the epoll waits) is the same work for every build, so a build that cuts the user \
             part by a fraction x cuts the whole by x times that share.",
            100.0 * share,
            r.baseline
        );
    }
    let pairs = measured_pairs(r);
    if pairs.is_empty() {
        return s;
    }
    s.push_str(
        "\nPGO's and BOLT's worth on each part (paired by round, geometric mean with its 95 % \
         interval, as above; \"of the whole\" is the user ratio's cut weighted by the \
         denominator's user share):\n\n\
         | pair | user CPU per request | kernel CPU per request | user cut, of the whole |\n\
         | --- | ---: | ---: | ---: |\n",
    );
    for (name, a, b) in pairs {
        let user = paired(&r.legs, a, b, raw::CPU_USER);
        let kernel = paired(&r.legs, a, b, raw::CPU_SYS);
        let share = median(r, raw::CPU_USER, b)
            .zip(median(r, raw::CPU_SYS, b))
            .filter(|(u, k)| u + k > 0.0)
            .map(|(u, k)| u / (u + k));
        let whole = user.zip(share).map_or("-".into(), |(p, sh)| {
            format!("{:.1} %", 100.0 * (1.0 - p.geomean) * sh)
        });
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {whole} |",
            cell(user, false),
            cell(kernel, false)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::{assemble, BoardOptions, Leg};
    use super::*;
    use crate::variant::{Variant, CONTROL};

    fn report(with_split: bool) -> BoardReport {
        let vs: Vec<Variant> = ["plain", CONTROL, "pgo", "pgo-bolt"]
            .iter()
            .map(|n| Variant {
                name: (*n).into(),
                path: (*n).into(),
            })
            .collect();
        let mut legs = Vec::new();
        for round in 0..4u32 {
            let wobble = 1.0 + 0.01 * f64::from(round % 2);
            for (name, user, kernel) in [
                ("plain", 24.0, 32.0),
                (CONTROL, 24.2, 31.8),
                ("pgo", 16.0, 32.1),
                ("pgo-bolt", 14.0, 31.9),
            ] {
                let mut l = Leg::new(name, round, 0);
                l.set(raw::CPU, Some((user + kernel) * wobble));
                if with_split {
                    l.set(raw::CPU_USER, Some(user * wobble));
                    l.set(raw::CPU_SYS, Some(kernel * wobble));
                }
                legs.push(l);
            }
        }
        let dir = std::env::temp_dir();
        assemble(&vs, &BoardOptions::new(dir.clone(), dir), legs, 1.0)
    }

    #[test]
    fn the_split_states_what_compiler_optimization_can_reach() {
        let r = report(true);
        let share = user_share(&r).unwrap();
        assert!((share - 24.0 / 56.0).abs() < 1e-9, "{share}");
        let md = markdown(&r);
        assert!(md.contains("**43 % of plain's CPU per request**"), "{md}");
        assert!(md.contains("| plain | 24.1 | 32.2 | 56.3 | 43 % |"), "{md}");
        // PGO cuts the user part by a third, beyond the interval; the kernel part is noise.
        let pgo = md
            .lines()
            .find(|l| l.starts_with("| PGO / plain |"))
            .unwrap();
        assert!(pgo.contains("0.667 (0.667..0.667) **better**"), "{pgo}");
        assert!(pgo.contains("| 14.3 % |"), "{pgo}");
        // The main table carries both parts with their control bands.
        assert!(crate::board::report::markdown(&r).contains("| gateway CPU per request: kernel |"));
    }

    #[test]
    fn results_without_the_split_print_no_section() {
        let r = report(false);
        assert_eq!(user_share(&r), None);
        assert_eq!(markdown(&r), "");
    }
}
