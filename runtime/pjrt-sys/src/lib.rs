//! Raw PJRT C API bindings, generated at build time from the installed plugin's header.
//!
//! This crate stands in for the registry `pjrt-sys` 0.2.0 (whose bindings date from C API 0.54
//! and are rejected by every current plugin) through `[patch.crates-io]`. It exposes the same
//! items the `pjrt` 0.2.0 crate uses:
//! - every binding bindgen generates from `pjrt_c_api.h` (types, constants, `PJRT_Api`);
//! - `PJRT_X::STRUCT_SIZE` and `PJRT_X::new()` (zeroed, with `struct_size` set) for every
//!   struct with a `PJRT_X_STRUCT_SIZE` constant, and a plain `new()` for the others;
//! - [`protos::xla`]: the compile-options messages `pjrt` encodes.
#![allow(non_upper_case_globals)]
#![allow(non_camel_case_types)]
#![allow(non_snake_case)]
#![allow(dead_code)]
#![allow(clippy::all)]
#![allow(rustdoc::all)]

include!(concat!(env!("OUT_DIR"), "/bindings.rs"));
include!(concat!(env!("OUT_DIR"), "/constructors.rs"));

extern "C" {
    /// A copy of the plugin's table `api` whose every function catches C++ exceptions and
    /// returns them as `PJRT_Error`s (`src/guard.cc`); the same copy for the same `api`. The
    /// returned table lives for the rest of the process. Up to four plugins per process are
    /// guarded; past that `api` itself comes back.
    pub fn fxhlo_pjrt_guard_api(api: *const PJRT_Api) -> *const PJRT_Api;
}

/// Protobuf messages (prost) that `pjrt` encodes into `PJRT_Client_Compile_Args`.
pub mod protos {
    include!(concat!(env!("OUT_DIR"), "/protos.rs"));
}
