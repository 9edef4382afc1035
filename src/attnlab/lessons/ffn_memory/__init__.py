"""⑪ What the FFN remembers: each neuron of a trained GPT's feed-forward layers read as a key (the contexts that fire
it) and a value (the tokens its output row promotes), then knocked out to see what it was for."""
