//! Paths in JSON (scan reports, plans, the journal), carried losslessly.
//!
//! A path that is valid UTF-8 is a JSON string, as before. One that is not (a file name of
//! arbitrary bytes, which Linux allows) is an object `{"lossy": "<display>", "bytes_hex":
//! "<exact bytes>"}`: readers show `lossy`, and plans and the journal keep the exact bytes, so a
//! plan still names exactly the file that was scanned. serde's own impl refuses such paths
//! ("path contains invalid UTF-8 characters"), which made `scan --json` fail on one odd name.
//!
//! Use with `#[serde(with = "crate::pathser::one")]` (and `opt`, `many`, `map`).

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Text(String),
    Bytes { lossy: String, bytes_hex: String },
}

fn to_repr(p: &Path) -> Repr {
    match p.to_str() {
        Some(s) => Repr::Text(s.to_string()),
        None => Repr::Bytes {
            lossy: p.to_string_lossy().into_owned(),
            bytes_hex: hex::encode(p.as_os_str().as_bytes()),
        },
    }
}

fn from_repr<E: serde::de::Error>(r: Repr) -> Result<PathBuf, E> {
    match r {
        Repr::Text(s) => Ok(PathBuf::from(s)),
        Repr::Bytes { bytes_hex, .. } => hex::decode(&bytes_hex)
            .map(|b| PathBuf::from(OsString::from_vec(b)))
            .map_err(|e| E::custom(format!("bad bytes_hex in a path: {e}"))),
    }
}

/// One path.
pub(crate) mod one {
    use super::*;
    pub(crate) fn serialize<S: Serializer>(p: &Path, s: S) -> Result<S::Ok, S::Error> {
        to_repr(p).serialize(s)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        from_repr(Repr::deserialize(d)?)
    }
}

/// An optional path.
pub(crate) mod opt {
    use super::*;
    pub(crate) fn serialize<S: Serializer>(p: &Option<PathBuf>, s: S) -> Result<S::Ok, S::Error> {
        p.as_deref().map(to_repr).serialize(s)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<PathBuf>, D::Error> {
        Option::<Repr>::deserialize(d)?.map(from_repr).transpose()
    }
}

/// A list of paths.
pub(crate) mod many {
    use super::*;
    pub(crate) fn serialize<S: Serializer>(p: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
        p.iter()
            .map(|p| to_repr(p))
            .collect::<Vec<_>>()
            .serialize(s)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
        Vec::<Repr>::deserialize(d)?
            .into_iter()
            .map(from_repr)
            .collect()
    }
}

/// A map of names to paths.
pub(crate) mod map {
    use super::*;
    use std::collections::BTreeMap;
    pub(crate) fn serialize<S: Serializer>(
        m: &BTreeMap<String, PathBuf>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        m.iter()
            .map(|(k, v)| (k.clone(), to_repr(v)))
            .collect::<BTreeMap<_, _>>()
            .serialize(s)
    }
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<BTreeMap<String, PathBuf>, D::Error> {
        BTreeMap::<String, Repr>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| Ok((k, from_repr(v)?)))
            .collect()
    }
}

/// A path for a person to read on one line: control characters (a newline in a file name) and
/// bytes that are not UTF-8 are escaped (`\n`, `\x1b`, `\xff`), so a name can neither break a
/// line nor send a terminal an escape sequence.
pub fn shown(p: &Path) -> String {
    escape_bytes(p.as_os_str().as_bytes())
}

/// [`shown`] for any text (a summary that embeds a path).
pub fn escape_text(s: &str) -> String {
    escape_bytes(s.as_bytes())
}

fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\\' => out.push_str("\\\\"),
                c if c.is_control() => {
                    let mut b = [0u8; 4];
                    for byte in c.encode_utf8(&mut b).bytes() {
                        out.push_str(&format!("\\x{byte:02x}"));
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "one")]
        p: PathBuf,
        #[serde(with = "many")]
        v: Vec<PathBuf>,
    }

    #[test]
    fn odd_names_round_trip_exactly_and_show_escaped() {
        let odd = PathBuf::from(OsString::from_vec(b"/h/disks/a\xff\nb.qcow2".to_vec()));
        let t = T {
            p: odd.clone(),
            v: vec!["/plain".into(), odd.clone()],
        };
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains("\"/plain\""), "{text}");
        assert!(text.contains("bytes_hex"), "{text}");
        let back: T = serde_json::from_str(&text).unwrap();
        assert_eq!(back, t);
        assert_eq!(shown(&odd), "/h/disks/a\\xff\\nb.qcow2");
        assert_eq!(escape_text("x\u{1b}[31my"), "x\\x1b[31my");
    }
}
