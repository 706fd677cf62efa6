//! Just enough ELF64 (little-endian) to read a named section: `.comment` (which toolchain
//! built a binary) and `.note.bolt_info` (the llvm-bolt command line that instrumented it).

use std::path::Path;

fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

/// The bytes of section `name`; `None` if the file is not a little-endian ELF64 or has no
/// such section.
pub fn section<'a>(elf: &'a [u8], name: &str) -> Option<&'a [u8]> {
    if elf.get(0..4)? != b"\x7fELF" || elf.get(4)? != &2 || elf.get(5)? != &1 {
        return None;
    }
    let shoff = usize::try_from(u64_at(elf, 0x28)?).ok()?;
    let shentsize = usize::from(u16_at(elf, 0x3A)?);
    let shnum = usize::from(u16_at(elf, 0x3C)?);
    let shstrndx = usize::from(u16_at(elf, 0x3E)?);
    let header = |i: usize| -> Option<(u32, usize, usize)> {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let name = u32_at(elf, h)?;
        let offset = usize::try_from(u64_at(elf, h + 24)?).ok()?;
        let size = usize::try_from(u64_at(elf, h + 32)?).ok()?;
        Some((name, offset, size))
    };
    let (_, str_off, str_size) = header(shstrndx)?;
    let strtab = elf.get(str_off..str_off.checked_add(str_size)?)?;
    for i in 0..shnum {
        let (n, off, size) = header(i)?;
        let rest = strtab.get(n as usize..)?;
        let end = rest.iter().position(|&b| b == 0)?;
        if &rest[..end] == name.as_bytes() {
            return elf.get(off..off.checked_add(size)?);
        }
    }
    None
}

/// The NUL-separated strings of section `name` of the file at `path`.
pub fn section_strings(path: &Path, name: &str) -> std::io::Result<Vec<String>> {
    let bytes = std::fs::read(path)?;
    Ok(section(&bytes, name)
        .map(|s| {
            s.split(|&b| b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect()
        })
        .unwrap_or_default())
}

/// The LLVM version rustc built the binary with, when it can be told: rustc's bundled
/// rust-lld records `Linker: LLD X.Y.Z (/checkout/src/llvm-project ...)` in `.comment`, and
/// rust-lld is built from the same LLVM as rustc. Another linker leaves it unknown.
pub fn rustc_llvm_version(comment: &[String]) -> Option<String> {
    if !comment.iter().any(|c| c.starts_with("rustc version ")) {
        return None;
    }
    comment.iter().find_map(|c| {
        let rest = c.strip_prefix("Linker: LLD ")?;
        if !rest.contains("/checkout/src/llvm-project") {
            return None;
        }
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!v.is_empty()).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_test_binary() {
        // Whatever linked this test, it is an ELF with a .comment naming rustc.
        let exe = std::env::current_exe().unwrap();
        let comment = section_strings(&exe, ".comment").unwrap();
        assert!(
            comment.iter().any(|c| c.starts_with("rustc version")),
            "{comment:?}"
        );
        assert!(section_strings(&exe, ".no-such-section")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn not_elf_is_none() {
        assert!(section(b"#!/bin/sh\n", ".comment").is_none());
        assert!(section(b"", ".comment").is_none());
    }

    #[test]
    fn llvm_version_from_rust_lld() {
        let c = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let rust = c(&[
            "rustc version 1.95.0 (59807616e 2026-04-14)",
            "Linker: LLD 22.1.2 (/checkout/src/llvm-project/llvm 1cb4e38)",
            "GCC: (Debian 12.2.0-14+deb12u1) 12.2.0",
        ]);
        assert_eq!(rustc_llvm_version(&rust).as_deref(), Some("22.1.2"));
        let other_lld = c(&["rustc version 1.95.0", "Linker: Debian LLD 19.1.7"]);
        assert_eq!(rustc_llvm_version(&other_lld), None);
        let no_rustc = c(&["Linker: LLD 22.1.2 (/checkout/src/llvm-project/llvm x)"]);
        assert_eq!(rustc_llvm_version(&no_rustc), None);
    }
}
