//! The gateway binaries a measurement compares: `--variant NAME=PATH`, the first the
//! baseline, and the name reserved for the baseline's identical copy.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{io, BenchError};

/// The variant name of the baseline's identical copy.
pub const CONTROL: &str = "control";

/// A named gateway binary: `--variant plain=target/release/gateway`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variant {
    pub name: String,
    pub path: PathBuf,
}

impl FromStr for Variant {
    type Err = String;

    fn from_str(s: &str) -> Result<Variant, String> {
        let (name, path) = s
            .split_once('=')
            .ok_or_else(|| format!("{s:?}: expected NAME=PATH"))?;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err(format!("{name:?}: a variant name is a-z, 0-9, '-' and '_'"));
        }
        if path.is_empty() {
            return Err(format!("{s:?}: empty path"));
        }
        Ok(Variant {
            name: name.to_owned(),
            path: PathBuf::from(path),
        })
    }
}

/// Variant names must be unique (and not the control's reserved name).
pub(crate) fn check_variants(variants: &[Variant]) -> Result<(), String> {
    if variants.is_empty() {
        return Err("give at least one --variant NAME=PATH".into());
    }
    for (i, v) in variants.iter().enumerate() {
        if variants[..i].iter().any(|w| w.name == v.name) {
            return Err(format!("variant {:?} given twice", v.name));
        }
        if v.name == CONTROL {
            return Err(format!("{:?} is reserved for the baseline's copy", CONTROL));
        }
        if !v.path.is_file() {
            return Err(format!(
                "variant {}: {} is not a file",
                v.name,
                v.path.display()
            ));
        }
    }
    Ok(())
}

/// `variants` with the control inserted after the baseline: a separate file with the
/// baseline's bytes, in `work_dir`. The same code at other page-cache pages and another path
/// is what a "different binary" can differ by without a change.
pub(crate) fn with_control(
    variants: &[Variant],
    work_dir: &Path,
) -> Result<Vec<Variant>, BenchError> {
    let mut all = variants.to_vec();
    let Some(base) = variants.first() else {
        return Ok(all);
    };
    let copy = work_dir.join(format!("{}-control", base.name));
    std::fs::copy(&base.path, &copy).map_err(io(format!(
        "copying {} to {}",
        base.path.display(),
        copy.display()
    )))?;
    all.insert(
        1,
        Variant {
            name: CONTROL.into(),
            path: copy,
        },
    );
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_parse() {
        let v: Variant = "pgo-bolt=/x/gateway".parse().unwrap();
        assert_eq!(v.name, "pgo-bolt");
        assert_eq!(v.path, PathBuf::from("/x/gateway"));
        assert!("plain".parse::<Variant>().is_err());
        assert!("=x".parse::<Variant>().is_err());
        assert!("a b=x".parse::<Variant>().is_err());
        assert!("a=".parse::<Variant>().is_err());
    }

    #[test]
    fn variants_are_unique_and_exist() {
        let me = std::env::current_exe().unwrap();
        let v = |n: &str| Variant {
            name: n.into(),
            path: me.clone(),
        };
        assert!(check_variants(&[v("plain"), v("pgo")]).is_ok());
        assert!(check_variants(&[v("plain"), v("plain")]).is_err());
        assert!(check_variants(&[v("control")]).is_err());
        assert!(check_variants(&[]).is_err());
        let missing = Variant {
            name: "x".into(),
            path: "/nonexistent/gateway".into(),
        };
        assert!(check_variants(&[missing]).is_err());
    }
}
