//! A results directory's vocabulary: the file names `scripts/benchmarks.sh` writes and the
//! number format of the tables. Below `report` and `translated`, which both read them.

/// The files of a results directory.
pub(crate) const META: &str = "meta.txt";
pub(crate) const CALLGRIND: &str = "callgrind.json";
pub(crate) const HOLDOUT: &str = "holdout.json";
pub(crate) const HOLDOUT_CALLGRIND: &str = "holdout-callgrind.json";
/// The reference shape's callgrind run on a plain-HTTP upstream (`--upstream http`), beside
/// `callgrind.json` on the shape's own (HTTPS): what TLS costs per request.
pub(crate) const CALLGRIND_HTTP: &str = "callgrind-http.json";
pub(crate) const AB: &str = "ab.json";
pub(crate) const AB_HOLDOUT: &str = "ab-holdout.json";
pub const RSS: &str = "rss.json";
pub(crate) const LOAD: &str = "load.json";
pub(crate) const SOAK: &str = "soak.json";
pub(crate) const SOAK_SHARED: &str = "soak-shared.json";
pub(crate) const BUILD_TIMES: &str = "build-times.tsv";
/// `scripts/bench-board.sh`'s board (2-core layout) and `scripts/bench-board-16.sh`'s.
pub(crate) const BOARD: &str = "board.json";
pub(crate) const BOARD_16: &str = "board-16.json";
/// `scripts/bench-hotpath.sh`'s directory: `callgrind.json`, `base.txt`, `after.txt`.
pub(crate) const HOTPATH: &str = "hotpath";
/// `callgrind_annotate` self-cost lines of the large runs: where the instructions go.
pub(crate) const TOP: &str = "callgrind-top.txt";
/// The variant trained on the benchmarked shape alone (the dilution check), when present in
/// `callgrind.json`.
pub(crate) const SINGLE: &str = "pgo-single";

/// The JSON result at `dir/name`, or `None` when that run did not write it.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    dir: &std::path::Path,
    name: &str,
) -> Result<Option<T>, String> {
    let p = dir.join(name);
    match std::fs::read_to_string(&p) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .map_err(|e| format!("{}: {e}", p.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("{}: {e}", p.display())),
    }
}

/// `1234567.8` -> `1,234,568`.
pub(crate) fn thousands(x: f64) -> String {
    let n = x.round() as i64;
    let s = n.abs().to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups() {
        assert_eq!(thousands(0.0), "0");
        assert_eq!(thousands(999.4), "999");
        assert_eq!(thousands(1000.0), "1,000");
        assert_eq!(thousands(123456789.0), "123,456,789");
        assert_eq!(thousands(-1234.0), "-1,234");
    }
}
