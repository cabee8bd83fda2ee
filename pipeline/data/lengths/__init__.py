"""Token lengths with the model's own tokenizer and chat template: the tokenizer resolution and counting rules
(tokenizer), the per-shard step (step), and the histograms, max-length choice and packing simulation over the
counted lengths (histogram)."""
