//! Integration tests of the core: one binary (links are slow on two cores), one module per
//! area.

mod queue;
mod store;
mod support;
mod transitions;
