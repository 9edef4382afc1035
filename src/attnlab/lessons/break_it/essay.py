"""The break-it lesson's own English text, written for the lab (not copied from any corpus): plain prose about
a night, a poem and a small model, long enough (about 4,000 characters) that its last tenth, held out, is text the
models never trained on. Character-level English has structure a tiny model learns in a hundred steps (spelling,
spaces, common words) and far more it cannot memorize: the held-out loss asks what each model learned, not what
it remembers. The ffn-first experiment trains on it by default (nothing of the 24-character 静夜思 can be held out).
"""

from __future__ import annotations

ESSAY = """\
It was late when the lamp went out, and the room filled with a pale light that seemed to come from the floor. \
For a moment the traveller thought it was frost. Then he looked up, saw the moon over the roof, and looked \
down again, thinking of the house where he was born. That is the whole of the poem, and most children in China \
can say it before they can read it. Four lines, five characters each, and nothing in them is difficult. \
Yet the poem is a small machine for turning one thing into another: light into frost, frost into the moon, \
the moon into home. Each line leans on the one before it, and the last word only makes sense because of the first.

A language model reads a line in much the same way, one character after another, and at every step it must \
guess what comes next. It cannot look ahead. All it has is what it has already read, and the question it asks \
at each position is simple: given everything so far, which character is likely now? To answer, it first lets \
each position gather what it needs from the earlier ones. This is attention. A position that holds the word \
moon might look back at bright, or at bed, or at nothing in particular, and it takes a weighted mix of what it \
finds. Then each position works on what it has gathered, on its own, with a small network of two layers. \
This is the feed-forward part. Gather, then think; gather again, then think again. A block of the model is \
one round of this, and a model is a stack of blocks.

Why gather first? Because a position that thinks before it has gathered anything can only think about itself. \
The first thing such a model does is work on each character alone, which any table of characters could do as \
well. At the other end, the last thing it does is gather, and what it gathers goes straight to the guess, with \
no step of thinking after it. Swap the two parts in every block and you get the same rounds, shifted by half a \
block: one lonely round of thinking at the start, and one round of gathering at the end that nobody works on. \
In a deep stack this is a small change, and a model can learn around it. In a small one it is not so small.

The only honest way to know is to try. Take two models that are the same in every way but one: the same seed, \
the same first weights, the same batches of text in the same order. Train both. Measure each on text it has \
never seen, since on text it has seen, a model can simply remember, and two models that both remember \
everything look alike. Do it again with another seed, and another, because one run can be lucky. Then compare, \
and say how large a difference has to be before you believe it. If the difference is smaller than the noise \
between seeds, you have not shown anything, and the right thing to say is that: not shown, at these settings.

This is harder than it sounds. A small model trained for a few seconds learns the easy things first: that a \
space follows most words, that the letter q is nearly always followed by u, that a full stop is followed by a \
space and a capital. It learns which short words are common and how longer ones tend to end. Only later does it \
learn anything that needs more than the last two or three characters. So a test on the first hundred steps is a \
test of how fast each model learns the easy things, and that is a fair question too, as long as we say that is \
the question we asked.

There is a lesson in this that goes beyond models. When we read a poem we also gather before we think. We take \
in the light on the floor, the frost, the moon, and only then do we feel the thing the poet meant, the distance \
between a room at night and a house far away. If we tried to feel it first and read afterwards, we would feel \
something, but it would not be this. Order is not everything, but it is not nothing either, and the way to find \
out how much it matters is to change it, keep everything else the same, and measure what happens.

So the lamp goes out again, and the light comes in again, and the model reads the line again, one character at \
a time. Sometimes it guesses well. Sometimes it guesses the most common letter and hopes. Each time it is wrong, \
its weights move a little, and the next guess is a little better. After a few hundred steps it has learned \
something about English and nothing at all about home. That part is still up to the reader.
"""
