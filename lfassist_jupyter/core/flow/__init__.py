"""The flow pipeline (``pipeline.FlowPipeline``) and its prompts."""
