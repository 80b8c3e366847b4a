//! The host CPU as an executable compiled for it needs it: XLA's CPU compiler generates code for
//! the machine it runs on (its LLVM host CPU and features), so an executable compiled on a
//! machine with AVX-512 dies of an illegal instruction on one without (XLA only logs "Target
//! machine feature ... is not supported on the host machine" as it loads it). The compile
//! cache keys CPU executables by [`cpu_features`], so that a cache folder shared between
//! machines (a network home, a container image, a CI cache) never hands one machine another's.

/// The instruction-set extensions of this CPU that code generators use, in a fixed order:
/// `x86_64 sse4.2 popcnt avx avx2 fma ... avx512f ...` (the architecture, then each extension
/// present). Extensions that do not change generated code (virtualization, timers) are left
/// out, so machines that differ only in those share entries.
pub fn cpu_features() -> String {
    let mut out = vec![std::env::consts::ARCH];
    present(&mut out);
    out.join(" ")
}

/// Pushes each named extension that `$detect` (`is_x86_feature_detected`, ...) finds.
#[allow(unused_macros)] // (no detection on other architectures)
macro_rules! push_present {
    ($out:ident, $detect:ident, $($f:tt),* $(,)?) => {
        $(if std::arch::$detect!($f) {
            $out.push($f);
        })*
    };
}

#[cfg(target_arch = "x86_64")]
fn present(out: &mut Vec<&'static str>) {
    push_present!(
        out, is_x86_feature_detected,
        "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "aes", "pclmulqdq", "avx", "avx2", "fma", "f16c", "bmi1", "bmi2",
        "lzcnt", "movbe", "adx", "sha", "gfni", "vaes", "vpclmulqdq", "avxvnni", "avx512f", "avx512cd", "avx512bw",
        "avx512dq", "avx512vl", "avx512ifma", "avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg",
        "avx512vpopcntdq", "avx512bf16", "avx512fp16",
    );
}

#[cfg(target_arch = "aarch64")]
fn present(out: &mut Vec<&'static str>) {
    push_present!(out, is_aarch64_feature_detected, "neon", "fp16", "dotprod", "i8mm", "bf16", "sve", "sve2", "crc", "aes", "sha2", "lse");
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn present(_out: &mut Vec<&'static str>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_architecture_first_and_each_extension_once() {
        let features = cpu_features();
        let words: Vec<&str> = features.split(' ').collect();
        assert_eq!(words[0], std::env::consts::ARCH);
        let mut seen = std::collections::HashSet::new();
        assert!(words.iter().all(|w| seen.insert(*w)), "{features}");
        // The same answer every time: it is part of a cache key.
        assert_eq!(features, cpu_features());
    }

    /// The kernel's own list (`/proc/cpuinfo`'s flags) is the independent reference: the
    /// extensions that decide AVX-512 against AVX2 code agree with it both ways.
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    #[test]
    fn agrees_with_the_kernels_flags() {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").expect("/proc/cpuinfo");
        let flags: std::collections::HashSet<&str> =
            cpuinfo.lines().find(|l| l.starts_with("flags")).expect("a flags line").split(':').nth(1).unwrap_or("").split_whitespace().collect();
        let features = cpu_features();
        let ours: std::collections::HashSet<&str> = features.split(' ').collect();
        for f in ["avx", "avx2", "fma", "f16c", "popcnt", "avx512f", "avx512bw", "avx512vl", "avx512dq"] {
            assert_eq!(ours.contains(f), flags.contains(f), "{f}: ours {features}");
        }
        println!("{features}");
    }
}
