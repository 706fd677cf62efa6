//! Where a JSON string's plain text ends: the first quote, backslash or control byte
//! (below 0x20), the bytes a string literal never holds as they are. Every string of a
//! translated request is scanned twice (read, then written): serde_json's byte loops cost
//! ~1.5 instructions a byte there, this ~0.3 (callgrind, issue 41).

/// The length of `b`'s plain prefix: the index of its first quote, backslash or control
/// byte, or `b.len()`.
pub(crate) fn plain_len(b: &[u8]) -> usize {
    let n = b.len();
    match n {
        // Keys and short values: a byte loop costs less than setting anything up.
        0..=7 => b.iter().position(|&x| special(x)).unwrap_or(n),
        // Two overlapping words: the bytes both hold are plain when the second is read.
        8..=15 => match word(&b[..8]) {
            0 => match word(&b[n - 8..]) {
                0 => n,
                m => n - 8 + m.trailing_zeros() as usize / 8,
            },
            m => m.trailing_zeros() as usize / 8,
        },
        _ => long(b),
    }
}

/// A JSON number token at `b[from..]`,
/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`: where it ends, and whether it is an
/// integer (no fraction, no exponent). `None`: no number there.
pub(crate) fn number(b: &[u8], from: usize) -> Option<(usize, bool)> {
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i > start
    };
    let mut i = from;
    if b.get(i) == Some(&b'-') {
        i += 1;
    }
    match b.get(i)? {
        b'0' => i += 1,
        b'1'..=b'9' => {
            digits(&mut i);
        }
        _ => return None,
    }
    let integer = i;
    if b.get(i) == Some(&b'.') {
        i += 1;
        if !digits(&mut i) {
            return None;
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(&mut i) {
            return None;
        }
    }
    Some((i, integer == i))
}

fn special(x: u8) -> bool {
    x == b'"' || x == b'\\' || x < 0x20
}

/// Eight bytes' flags (high bits) for a special byte: the lowest flag is exact, later
/// ones may be false (a borrow carries out of a special byte, never out of a plain one).
fn word(w: &[u8]) -> u64 {
    const ONES: u64 = u64::MAX / 255;
    let w = u64::from_le_bytes(w.try_into().expect("eight bytes"));
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    ((w.wrapping_sub(ONES * 0x20) & !w)
        | (quote.wrapping_sub(ONES) & !quote)
        | (backslash.wrapping_sub(ONES) & !backslash))
        & (ONES << 7)
}

/// `b` holds at least 16 bytes.
#[cfg(target_arch = "x86_64")]
fn long(b: &[u8]) -> usize {
    if b.len() >= 32 && std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is present (checked just above).
        return unsafe { avx2(b) };
    }
    sse2(b)
}

#[cfg(not(target_arch = "x86_64"))]
fn long(b: &[u8]) -> usize {
    let mut i = 0;
    while i + 8 <= b.len() {
        match word(&b[i..i + 8]) {
            0 => i += 8,
            m => return i + m.trailing_zeros() as usize / 8,
        }
    }
    i + b[i..]
        .iter()
        .position(|&x| special(x))
        .unwrap_or(b.len() - i)
}

/// 32 bytes a step; `b` holds at least 32. The last step overlaps the one before it rather
/// than finishing byte by byte: its earlier bytes are known plain already.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2(b: &[u8]) -> usize {
    let mut i = 0;
    while i + 32 <= b.len() {
        // SAFETY: i + 32 <= b.len(); AVX2 as for this function.
        let m = unsafe { mask32(b, i) };
        if m != 0 {
            return i + m.trailing_zeros() as usize;
        }
        i += 32;
    }
    if i == b.len() {
        return i;
    }
    let last = b.len() - 32;
    // SAFETY: b.len() >= 32.
    match unsafe { mask32(b, last) } {
        0 => b.len(),
        m => last + m.trailing_zeros() as usize,
    }
}

/// One bit per special byte of `b[i..i + 32]`.
///
/// # Safety
/// AVX2 is present and `i + 32 <= b.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn mask32(b: &[u8], i: usize) -> u32 {
    use std::arch::x86_64::{
        __m256i, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8, _mm256_movemask_epi8,
        _mm256_or_si256, _mm256_set1_epi8,
    };
    // SAFETY: an unaligned load inside `b` (the caller's promise).
    let v = unsafe { _mm256_loadu_si256(b.as_ptr().add(i).cast::<__m256i>()) };
    // min(v, 0x1f) == v exactly where v <= 0x1f (unsigned).
    let hit = _mm256_or_si256(
        _mm256_or_si256(
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8)),
            _mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8)),
        ),
        _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v),
    );
    _mm256_movemask_epi8(hit) as u32
}

/// 16 bytes a step (SSE2 is part of x86_64); `b` holds at least 16. The last step
/// overlaps, as in [`avx2`].
#[cfg(target_arch = "x86_64")]
fn sse2(b: &[u8]) -> usize {
    let mut i = 0;
    while i + 16 <= b.len() {
        match mask16(b, i) {
            0 => i += 16,
            m => return i + m.trailing_zeros() as usize,
        }
    }
    if i == b.len() {
        return i;
    }
    let last = b.len() - 16;
    match mask16(b, last) {
        0 => b.len(),
        m => last + m.trailing_zeros() as usize,
    }
}

/// One bit per special byte of `b[i..i + 16]`; panics unless `i + 16 <= b.len()`.
#[cfg(target_arch = "x86_64")]
fn mask16(b: &[u8], i: usize) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    let chunk = &b[i..i + 16];
    // SAFETY: SSE2 is part of x86_64; an unaligned load of the 16 bytes of `chunk`.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
        let hit = _mm_or_si128(
            _mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
            ),
            _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v),
        );
        _mm_movemask_epi8(hit) as u32
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn by_bytes(b: &[u8]) -> usize {
        b.iter().position(|&x| special(x)).unwrap_or(b.len())
    }

    proptest! {
        /// Every length (the short, the 16-byte and the 32-byte paths, overlapping tails),
        /// with the first special byte anywhere or nowhere.
        #[test]
        fn finds_the_first_special_byte(
            len in 0..200usize,
            fill in prop::sample::select(vec![b'a', 0x7f, 0x80, 0xff, b' ']),
            at in 0..220usize,
            byte in prop::sample::select(vec![b'"', b'\\', 0, 0x1f, b'\n']),
            later in 0..220usize,
        ) {
            let mut b = vec![fill; len];
            if at < len {
                b[at] = byte;
            }
            if later < len {
                b[later] = b'"';
            }
            prop_assert_eq!(plain_len(&b), by_bytes(&b));
            #[cfg(target_arch = "x86_64")]
            if len >= 16 {
                prop_assert_eq!(sse2(&b), by_bytes(&b));
            }
        }

        #[test]
        fn any_bytes(b in prop::collection::vec(any::<u8>(), 0..100)) {
            prop_assert_eq!(plain_len(&b), by_bytes(&b));
        }
    }
}
