//! A server that speaks only OpenAI chat completions (vLLM, Ollama, llama.cpp, Groq): a
//! bearer key, OpenAI's paths, as OpenAI's home (which client dialects it speaks is
//! `crate::dialect`'s).

use super::Home;

pub(crate) const HOME: Home = super::openai::HOME;
