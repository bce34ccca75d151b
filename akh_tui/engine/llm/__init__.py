"""Language-model deciders: the model's side of choosing a tool."""
