#!/usr/bin/env python3
"""Writes the story-opening prompt sets used by the Jacobi Forcing demonstration: 1,000 for collecting
training trajectories and 100 held out for evaluation (disjoint). Deterministic (seeded); the openings are
generated from templates written for this project."""
import json
import random

random.seed(20261122)
names = ["Lily", "Ben", "Mia", "Tom", "Sara", "Max", "Anna", "Sam", "Lucy", "Jack", "Zoe", "Tim", "Emma", "Leo",
         "Ruby", "Finn", "Ella", "Noah", "Rosie", "Jake", "Daisy", "Oscar", "Molly", "Ollie", "Kitty", "Bob", "Sue",
         "Amy", "Joe", "Kim", "Dan", "Eva", "Ivy", "Ted", "Nina", "Pip"]
animals = ["bunny", "bird", "dog", "cat", "mouse", "bear", "frog", "lion", "turtle", "fox", "duck", "owl", "fish",
           "puppy", "kitten", "squirrel", "elephant", "monkey", "horse", "cow"]
adjs = ["little", "small", "big", "happy", "friendly", "curious", "brave", "shy", "silly", "kind", "sleepy", "tiny"]
places = ["in the park", "by the sea", "in a big forest", "near a small river", "in a quiet town", "on a sunny farm",
          "in a tall tree", "at the zoo", "in a cozy house", "on a green hill", "in the garden", "at school",
          "by the lake", "in the backyard", "on the beach"]
things = ["ball", "stone", "kite", "box", "boat", "flower", "hat", "toy car", "key", "shell", "book", "cake",
          "balloon", "cup", "doll", "drum", "apple", "feather", "map", "blanket"]
colors = ["red", "blue", "shiny", "yellow", "green", "pink", "big", "old", "new", "pretty", "funny", "soft"]
feelings = ["happy", "sad", "scared", "excited", "curious", "tired", "proud", "surprised", "angry", "bored"]
verbs = ["play", "run", "jump", "swim", "read", "dance", "sing", "draw", "climb", "build"]
templates = [
    "Once upon a time, there was a {adj} {animal} who lived {place}.",
    "Once upon a time, there was a little girl named {name}. She loved to {verb} {place}.",
    "Once upon a time, there was a little boy named {name}. He liked to {verb} every day.",
    "One day, {name} found a {color} {thing} {place}.",
    "{name} and {name2} were best friends. Every day they went to {verb} {place}.",
    "There was once a {adj} {animal} named {name}. {name} was very {feeling} because",
    "One sunny morning, {name} woke up and saw a {color} {thing} on the floor.",
    "{name} had a {color} {thing}. {name} liked it very much, but one day",
    "In a small house {place}, there lived a {adj} {animal}.",
    "One day, {name}'s mom said, \"Let's go outside!\" {name} was so {feeling}.",
    "Once upon a time, a {adj} {animal} wanted to find a {color} {thing}.",
    "{name} was {feeling}. {name} did not want to {verb} today.",
]

def make():
    t = random.choice(templates)
    n1, n2 = random.sample(names, 2)
    return t.format(name=n1, name2=n2, adj=random.choice(adjs), animal=random.choice(animals),
                    place=random.choice(places), thing=random.choice(things), color=random.choice(colors),
                    feeling=random.choice(feelings), verb=random.choice(verbs))

seen, out = set(), []
while len(out) < 1100:
    s = make()
    if s not in seen:
        seen.add(s)
        out.append(s)
for path, items in (("stories_train1000.jsonl", out[:1000]), ("stories_holdout100.jsonl", out[1000:])):
    with open(path, "w") as f:
        for s in items:
            f.write(json.dumps({"prompt": s}) + "\n")
