//! Gemini's JSON, typed and borrowed (as `translate::wire` does for the other dialects): a
//! `Value` tree per answer or chunk would cost more than the rest of the translation.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

// ---- answers and stream chunks, as an upstream sends them ----

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateIn<'a> {
    #[serde(borrow, default)]
    pub(crate) candidates: Option<Vec<CandidateIn<'a>>>,
    #[serde(default)]
    pub(crate) usage_metadata: Option<UsageIn>,
    #[serde(borrow, default)]
    pub(crate) model_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) response_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) prompt_feedback: Option<PromptFeedbackIn<'a>>,
    /// An error object in place of an answer (mid-stream).
    #[serde(borrow, default)]
    pub(crate) error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CandidateIn<'a> {
    #[serde(borrow, default)]
    pub(crate) content: Option<ContentIn<'a>>,
    #[serde(borrow, default)]
    pub(crate) finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct ContentIn<'a> {
    #[serde(borrow, default)]
    pub(crate) parts: Option<Vec<PartIn<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PartIn<'a> {
    #[serde(borrow, default)]
    pub(crate) text: Option<Cow<'a, str>>,
    /// A thought summary, not answer text.
    #[serde(default)]
    pub(crate) thought: Option<bool>,
    #[serde(borrow, default)]
    pub(crate) function_call: Option<FunctionCallIn<'a>>,
    #[serde(borrow, default)]
    pub(crate) thought_signature: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
pub(crate) struct FunctionCallIn<'a> {
    #[serde(borrow, default)]
    pub(crate) id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub(crate) args: Option<&'a RawValue>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PromptFeedbackIn<'a> {
    #[serde(borrow, default)]
    pub(crate) block_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageIn {
    pub(crate) prompt_token_count: Option<u64>,
    pub(crate) candidates_token_count: Option<u64>,
    pub(crate) cached_content_token_count: Option<u64>,
    pub(crate) thoughts_token_count: Option<u64>,
    pub(crate) tool_use_prompt_token_count: Option<u64>,
}

// ---- requests, as the gateway asks a Gemini upstream ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateRequestOut<'a> {
    pub(crate) contents: Vec<ContentOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system_instruction: Option<SystemOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<ToolOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tool_config: Option<ToolConfigOut<'a>>,
    pub(crate) generation_config: GenerationConfigOut<'a>,
}

#[derive(Serialize)]
pub(crate) struct SystemOut<'a> {
    pub(crate) parts: Vec<TextOut<'a>>,
}

#[derive(Serialize)]
pub(crate) struct TextOut<'a> {
    pub(crate) text: &'a str,
}

#[derive(Serialize)]
pub(crate) struct ContentOut<'a> {
    pub(crate) role: &'static str,
    pub(crate) parts: Vec<PartOut<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum PartOut<'a> {
    Text {
        text: Cow<'a, str>,
    },
    #[serde(rename_all = "camelCase")]
    Inline {
        inline_data: BlobOut<'a>,
    },
    #[serde(rename_all = "camelCase")]
    File {
        file_data: FileOut<'a>,
    },
    #[serde(rename_all = "camelCase")]
    Call {
        function_call: FunctionCallOut<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        thought_signature: Option<String>,
    },
    #[serde(rename_all = "camelCase")]
    Result {
        function_response: FunctionResponseOut<'a>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BlobOut<'a> {
    pub(crate) mime_type: &'a str,
    pub(crate) data: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FileOut<'a> {
    pub(crate) mime_type: &'static str,
    pub(crate) file_uri: &'a str,
}

#[derive(Serialize)]
pub(crate) struct FunctionCallOut<'a> {
    pub(crate) id: &'a str,
    pub(crate) name: &'a str,
    pub(crate) args: &'a RawValue,
}

#[derive(Serialize)]
pub(crate) struct FunctionResponseOut<'a> {
    pub(crate) id: &'a str,
    pub(crate) name: &'a str,
    pub(crate) response: serde_json::Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolOut<'a> {
    pub(crate) function_declarations: Vec<FunctionDeclarationOut<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionDeclarationOut<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<&'a str>,
    /// Full JSON Schema (Gemini's `parameters` takes only its OpenAPI subset).
    pub(crate) parameters_json_schema: &'a serde_json::Value,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolConfigOut<'a> {
    pub(crate) function_calling_config: FunctionCallingConfigOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct FunctionCallingConfigOut<'a> {
    pub(crate) mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) allowed_function_names: Option<[&'a str; 1]>,
}

#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerationConfigOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_output_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) temperature: Option<&'a serde_json::Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) top_p: Option<&'a serde_json::Number>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) top_k: Option<&'a serde_json::Number>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) thinking_config: Option<ThinkingOut>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) response_json_schema: Option<&'a serde_json::Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThinkingOut {
    pub(crate) thinking_budget: u64,
}

// ---- answers, as the gateway writes them to a Gemini client ----

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GenerateOut<'a> {
    pub(crate) candidates: [CandidateOut<'a>; 1],
    pub(crate) usage_metadata: UsageOut,
    pub(crate) model_version: &'a str,
    pub(crate) response_id: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CandidateOut<'a> {
    pub(crate) content: AnswerContentOut<'a>,
    pub(crate) finish_reason: &'static str,
    pub(crate) index: u32,
}

#[derive(Serialize)]
pub(crate) struct AnswerContentOut<'a> {
    pub(crate) role: &'static str,
    pub(crate) parts: Vec<AnswerPartOut<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum AnswerPartOut<'a> {
    Text {
        text: &'a str,
    },
    #[serde(rename_all = "camelCase")]
    Call {
        function_call: FunctionCallOut<'a>,
    },
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct UsageOut {
    pub(crate) prompt_token_count: u64,
    pub(crate) candidates_token_count: u64,
    pub(crate) total_token_count: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cached_content_token_count: Option<u64>,
}
