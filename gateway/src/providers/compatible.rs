//! A server that speaks only OpenAI chat completions (vLLM, Ollama, llama.cpp, Groq): a
//! bearer key, OpenAI's paths, as OpenAI's home.

use super::{Home, Quirks};
use crate::dialect::Upstream;

pub(crate) const HOME: Home = Home {
    speaks: &[Upstream::Chat],
    // Not OpenAI's models: `max_tokens`, which compatible servers know.
    quirks: Quirks::PLAIN,
    ..super::openai::HOME
};
