"""The prompting lesson (⑦ use it): in-context learning of a mapping the model never saw, measured by shots."""
