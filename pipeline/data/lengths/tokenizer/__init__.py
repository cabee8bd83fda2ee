"""The trainer's tokenizer: resolution, offline loading, and exact token counts.

Resolution (`resolve_tokenizer(tokenizer, model)`), first match wins:
  1. an explicit tokenizer (`--tokenizer` / `lengths.tokenizer`): a local folder or file, a Hugging Face hub id,
     or an alias: "mistral-32k" (the offline default) or "tekken" (the 131k Tekken of Mistral NeMo and later);
  2. tokenizer files next to the model config (`model` given as a config file path or a model folder);
  3. the model's own tokenizer by its hub id (a built-in name maps to the hub ids of data/models.json): from
     the local Hugging Face cache (HF_HUB_CACHE / HF_HOME), else fetched from the Hub, tokenizer files only,
     with a short timeout (skipped when HF_HUB_OFFLINE=1);
  4. the offline default: the Mistral 32k SentencePiece (Mistral-7B v0.1) shipped inside mistral-common,
     loaded through transformers from a cache folder holding a copy of it and a tokenizer_config.json with
     DEFAULT_CHAT_TEMPLATE. It is the model's own only for Mistral-7B; for any other model the spec says
     `exact=False` with the reason, and every output flags the counts and the plan as approximate.
The resolved spec carries a display name and the reason it was chosen, for the report.

Counting (what the trainer sees, trl's SFTTrainer conventions):
  * chat / instruction records: the chat template renders the conversation as one string, which is tokenized
    without adding special tokens (the template writes them), exactly like `apply_chat_template(tokenize=True)`.
    Trainable tokens are the tokens overlapping the assistant spans: the template's {% generation %} blocks (the
    same rule as transformers' `return_assistant_tokens_mask`, which trl's `assistant_only_loss` uses); for a
    template without generation blocks each assistant turn spans from the end of the rendered prefix with a
    generation prompt to the end of the rendered prefix including that turn.
  * text records: `text + eos_token` (trl appends the EOS to language-modeling rows) tokenized with the
    tokenizer's own special tokens (BOS where the tokenizer adds one); all tokens are trainable.
  * Tekken (mistral-common, as mistral-finetune encodes): the conversation is encoded in fine-tuning validation
    mode; trainable = assistant message tokens + their EOS; text = BOS + text + EOS.

Chat records are rendered from exactly what the trainer gets back from the shards (`records.template_inputs`:
the messages as written, tool calls in the Hugging Face form with arguments as JSON objects, and the record's
`tools` passed as apply_chat_template(tools=...)), so tool schemas are counted where the template renders them.

Modules (callers import from the one that owns the name; this package exports nothing itself):
  resolve         TokenizerSpec, resolve_tokenizer, fallback_warning: which tokenizer, and why
  load            load_tokenizer (the handle for a spec, once per process), spec_fingerprint
  handle          TokenizerHandle: what a handle offers (measure, piece_ends)
  hf_handle       HFHandle: a Hugging Face tokenizer and its chat template
  mistral_handle  MistralCommonHandle: Tekken through mistral-common
  chat_template   DEFAULT_CHAT_TEMPLATE, render_default, is_chat: what is rendered
  counting        SentencePieceCounter: fast exact counts for the SentencePiece BPE family
  cache           prepare's cache folder, and the loadable folder of a SentencePiece model file
"""
