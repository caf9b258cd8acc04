//! Every output of a run, rendered from its [`Outcome`](crate::operation::Outcome)
//! (or, when it stopped, its [`Error`](crate::error::Error)): one module per
//! audience, over the one model.
//!
//! | audience | module | what it renders |
//! |---|---|---|
//! | machines | [`report`] | the ResultV2 report (JSON, YAML) |
//!
//! The operation records each change and each warning once, in the
//! outcome; nothing here adds to or drops from them.

pub mod report;
