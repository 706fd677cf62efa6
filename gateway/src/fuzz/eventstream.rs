//! The event-stream framer (`translate::stream::eventstream`, Bedrock's ConverseStream):
//! valid frames cut anywhere yield the same events as the whole stream, in order, with
//! nothing held at the end; a flipped byte or arbitrary bytes never panic, never hold more
//! than one frame's bound, and once the framer fails it yields nothing more.

use proptest::prelude::*;
use proptest::sample::Index;

use super::{cuts, fuzz, pieces};
use crate::translate::stream::eventstream::testing::{event, exception};
use crate::translate::stream::eventstream::{EventStreamFramer, MAX_FRAME_BYTES};

/// ConverseStream's events and exceptions as Bedrock sends them.
const CONVERSE: [(&str, &str, bool); 10] = [
    ("messageStart", r#"{"role":"assistant"}"#, false),
    (
        "contentBlockStart",
        r#"{"contentBlockIndex":1,"start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_kZJMlvQmRJ6eAyJE5GIl7Q"}}}"#,
        false,
    ),
    (
        "contentBlockDelta",
        r#"{"contentBlockIndex":0,"delta":{"text":"Hello \"there\"\n"}}"#,
        false,
    ),
    (
        "contentBlockDelta",
        r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"location\": \"Seattle"}}}"#,
        false,
    ),
    ("contentBlockStop", r#"{"contentBlockIndex":0}"#, false),
    ("messageStop", r#"{"stopReason":"tool_use"}"#, false),
    (
        "metadata",
        r#"{"metrics":{"latencyMs":1254},"usage":{"inputTokens":412,"outputTokens":43,"totalTokens":455}}"#,
        false,
    ),
    (
        "throttlingException",
        r#"{"message":"Too many requests, please wait before trying again."}"#,
        true,
    ),
    (
        "modelStreamErrorException",
        r#"{"message":"Model stream error","originalMessage":"overloaded","originalStatusCode":529}"#,
        true,
    ),
    (
        "validationException",
        r#"{"message":"Malformed input request, please reformat your input and try again."}"#,
        true,
    ),
];

/// (name, payload, is an exception) per frame: Bedrock's own, or random ones.
fn frames() -> impl Strategy<Value = Vec<(String, Vec<u8>, bool)>> {
    let random = (
        "[a-zA-Z]{1,20}",
        prop::collection::vec(any::<u8>(), 0..300),
        any::<bool>(),
    );
    let real = prop::sample::select(CONVERSE.to_vec())
        .prop_map(|(n, p, e)| (n.to_owned(), p.as_bytes().to_vec(), e));
    // Mostly random: the framer reads no payload, and the random frames find its length
    // bugs (an empty payload, say) sooner.
    prop::collection::vec(prop_oneof![5 => random, 1 => real], 0..12)
}

fn encode(frames: &[(String, Vec<u8>, bool)]) -> Vec<u8> {
    let mut s = Vec::new();
    for (name, payload, exc) in frames {
        let payload = String::from_utf8_lossy(payload);
        s.extend(if *exc {
            exception(name, &payload)
        } else {
            event(name, &payload)
        });
    }
    s
}

type Case = (
    Vec<(String, Vec<u8>, bool)>,
    Vec<Index>,
    Option<(Index, u8)>,
);

fn check((frames, at, flip): Case) -> Result<(), TestCaseError> {
    let stream = encode(&frames);
    let want: Vec<(Vec<u8>, Vec<u8>)> = frames
        .iter()
        .map(|(n, p, _)| {
            (
                n.as_bytes().to_vec(),
                String::from_utf8_lossy(p).as_bytes().to_vec(),
            )
        })
        .collect();
    let mut stream = stream;
    let flip = flip.filter(|_| !stream.is_empty());
    if let Some((i, bit)) = flip {
        let i = i.index(stream.len());
        stream[i] ^= 1 << (bit % 8);
    }
    let cuts = cuts(&at, stream.len());
    let mut f = EventStreamFramer::new();
    let mut got = Vec::new();
    let mut after_failure = 0;
    for piece in pieces(&stream, &cuts) {
        let failed = f.failure().is_some();
        f.feed(piece, |e| {
            if failed {
                after_failure += 1;
            }
            got.push((e.event.to_vec(), e.data.to_vec()));
        });
        prop_assert!(f.held() <= MAX_FRAME_BYTES);
    }
    prop_assert_eq!(after_failure, 0);
    if flip.is_none() {
        prop_assert_eq!(&got, &want);
        prop_assert!(!f.is_mid_event() && f.failure().is_none());
    } else {
        // CRC-32 catches every one-bit error: what came before the damage came as sent,
        // nothing after it is made up, and the framer says it failed.
        prop_assert!(got.len() < want.len());
        prop_assert_eq!(&got[..], &want[..got.len()]);
        prop_assert!(f.failure().is_some());
    }
    Ok(())
}

#[test]
fn fuzz_eventstream_framer() {
    let case = (
        frames(),
        prop::collection::vec(any::<Index>(), 0..10),
        prop::option::weighted(0.5, (any::<Index>(), any::<u8>())),
    );
    fuzz("eventstream_framer", case, check);
}

/// Arbitrary bytes: no panic, bounded holding.
#[test]
fn fuzz_eventstream_garbage() {
    let case = (
        prop::collection::vec(any::<u8>(), 0..2000),
        prop::collection::vec(any::<Index>(), 0..10),
    );
    fuzz("eventstream_garbage", case, |(bytes, at)| {
        let mut f = EventStreamFramer::new();
        for piece in pieces(&bytes, &cuts(&at, bytes.len())) {
            f.feed(piece, |_| {});
            prop_assert!(f.held() <= MAX_FRAME_BYTES);
        }
        Ok(())
    });
}
