//! End-to-end tests: IR → codegen (melior) → the real PJRT CPU plugin, checked against values
//! computed independently in each test, and the bundled fixtures against PyTorch's references.

mod attributes;
mod cache;
mod codegen_e2e;
mod dumps;
mod eqsat;
mod fixtures;
mod freeze;
mod golden;
mod layout;
mod ops;
mod resident;
mod serialize;
mod support;
