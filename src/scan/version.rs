//! Versions embedded in Celesto image-cache names, and their ordering.

use std::cmp::Ordering;

/// The version in a cache directory name, exactly as upstream finds it: the first match of
/// `-v(\d+\.\d+\.\d+[a-z0-9]*(?:\.[a-z0-9]+)*)-` (`celesto/cli/prune.py`).
pub(crate) fn cache_version(name: &str) -> Option<&str> {
    let b = name.as_bytes();
    let mut start = 0;
    while let Some(off) = name[start..].find("-v") {
        let vstart = start + off + 2;
        if let Some(end) = match_version(b, vstart) {
            return Some(&name[vstart..end]);
        }
        start += off + 1;
    }
    None
}

/// Match the version pattern at `i`; return the end index if it is followed by `-`.
///
/// The regex is greedy with backtracking, but its character classes never include `-`, so the
/// match must end exactly where the run of `[a-z0-9.]` ends and a `-` follows.
fn match_version(b: &[u8], mut i: usize) -> Option<usize> {
    // three dot-separated digit runs
    for part in 0..3 {
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == s {
            return None;
        }
        if part < 2 {
            if i < b.len() && b[i] == b'.' {
                i += 1;
            } else {
                return None;
            }
        }
    }
    // [a-z0-9]*
    while i < b.len() && (b[i].is_ascii_lowercase() || b[i].is_ascii_digit()) {
        i += 1;
    }
    // (?:\.[a-z0-9]+)*
    loop {
        if i + 1 < b.len()
            && b[i] == b'.'
            && (b[i + 1].is_ascii_lowercase() || b[i + 1].is_ascii_digit())
        {
            i += 1;
            while i < b.len() && (b[i].is_ascii_lowercase() || b[i].is_ascii_digit()) {
                i += 1;
            }
        } else {
            break;
        }
    }
    (i < b.len() && b[i] == b'-').then_some(i)
}

/// A PEP 440-style version, enough to order Celesto releases (`0.1.10`, `0.0.24.post3`,
/// `0.0.14a0`, `1.2.3rc1`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Version {
    release: Vec<u64>,
    /// (0 = dev, 1 = a, 2 = b, 3 = rc, 4 = final, n)
    pre: (u8, u64),
    post: Option<u64>,
}

impl Version {
    pub(crate) fn parse(s: &str) -> Option<Version> {
        let s = s.trim().trim_start_matches('v').to_ascii_lowercase();
        let mut release = Vec::new();
        let mut rest = s.as_str();
        loop {
            let n = rest.bytes().take_while(|c| c.is_ascii_digit()).count();
            if n == 0 {
                return None;
            }
            release.push(rest[..n].parse().ok()?);
            rest = &rest[n..];
            if rest.starts_with('.') && rest[1..].starts_with(|c: char| c.is_ascii_digit()) {
                rest = &rest[1..];
            } else {
                break;
            }
        }
        let mut pre = (4u8, 0u64);
        let mut post = None;
        let mut rest = rest.trim_start_matches(['.', '-', '_']);
        for (tag, rank) in [("rc", 3u8), ("c", 3), ("a", 1), ("b", 2), ("dev", 0)] {
            if let Some(r) = rest.strip_prefix(tag) {
                let n = r.bytes().take_while(|c| c.is_ascii_digit()).count();
                pre = (rank, r[..n].parse().unwrap_or(0));
                rest = r[n..].trim_start_matches(['.', '-', '_']);
                break;
            }
        }
        if let Some(r) = rest.strip_prefix("post") {
            let n = r.bytes().take_while(|c| c.is_ascii_digit()).count();
            post = Some(r[..n].parse().unwrap_or(0));
            rest = &r[n..];
        }
        if !rest.is_empty() {
            return None;
        }
        Some(Version { release, pre, post })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let n = self.release.len().max(other.release.len());
        for i in 0..n {
            let a = self.release.get(i).copied().unwrap_or(0);
            let b = other.release.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                o => return o,
            }
        }
        self.pre
            .cmp(&other.pre)
            .then(self.post.unwrap_or(0).cmp(&other.post.unwrap_or(0)))
            .then(self.post.is_some().cmp(&other.post.is_some()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_version_like_upstreams_regex() {
        assert_eq!(cache_version("ubuntu-v0.1.10-amd64-qemu"), Some("0.1.10"));
        assert_eq!(
            cache_version("alpine-v0.0.24.post3-amd64-fc-alpine"),
            Some("0.0.24.post3")
        );
        assert_eq!(cache_version("x-v0.0.14a0-arm64-qemu"), Some("0.0.14a0"));
        assert_eq!(
            cache_version("base-kernel-v1.2.3rc1-amd64"),
            Some("1.2.3rc1")
        );
        // no trailing dash: never matched upstream
        assert_eq!(cache_version("ubuntu-v0.1.9"), None);
        assert_eq!(cache_version("s3"), None);
        assert_eq!(cache_version("custom"), None);
        assert_eq!(cache_version("a-v1.2-x"), None);
        // only the first match counts
        assert_eq!(cache_version("a-v0.0.9-b-v0.1.10-c"), Some("0.0.9"));
        // a failed first candidate does not hide a later one
        assert_eq!(cache_version("a-vx-b-v0.1.2-c"), Some("0.1.2"));
    }

    #[test]
    fn orders_releases_pre_and_post() {
        let v = |s| Version::parse(s).unwrap();
        assert!(v("0.0.9") < v("0.1.10"));
        assert!(v("0.1.9") < v("0.1.10"));
        assert!(v("0.0.14a0") < v("0.0.14"));
        assert!(v("0.0.24") < v("0.0.24.post3"));
        assert!(v("1.2.3rc1") < v("1.2.3"));
        assert!(v("1.2.3rc1") > v("0.1.10"));
        assert!(v("0.0.36") < v("0.1.10"));
        assert_eq!(v("0.1.10"), v("0.1.10"));
        assert!(Version::parse("banana").is_none());
    }
}
