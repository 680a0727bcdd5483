#!/usr/bin/env python3
"""Writes a large, varied set of story openings for Jacobi Forcing training (default 10,000), disjoint from
the 100 held-out openings in stories_holdout100.jsonl. Deterministic (seeded); templates and word lists
were written for this project. Usage: make_story_prompts_large.py OUT.jsonl [N]"""
import json
import os
import random
import sys

out_path = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
random.seed(20261124)
names = ["Lily", "Ben", "Mia", "Tom", "Sara", "Max", "Anna", "Sam", "Lucy", "Jack", "Zoe", "Tim", "Emma", "Leo",
         "Ruby", "Finn", "Ella", "Noah", "Rosie", "Jake", "Daisy", "Oscar", "Molly", "Ollie", "Kitty", "Bob", "Sue",
         "Amy", "Joe", "Kim", "Dan", "Eva", "Ivy", "Ted", "Nina", "Pip", "Lola", "Alex", "Grace", "Harry", "Chloe",
         "Jim", "Kate", "Paul", "Rose", "Will"]
animals = ["bunny", "bird", "dog", "cat", "mouse", "bear", "frog", "lion", "turtle", "fox", "duck", "owl", "fish",
           "puppy", "kitten", "squirrel", "elephant", "monkey", "horse", "cow", "pig", "sheep", "bee", "ant", "goat"]
adjs = ["little", "small", "big", "happy", "friendly", "curious", "brave", "shy", "silly", "kind", "sleepy", "tiny",
        "clever", "gentle", "lazy", "grumpy", "busy", "quiet"]
places = ["in the park", "by the sea", "in a big forest", "near a small river", "in a quiet town", "on a sunny farm",
          "in a tall tree", "at the zoo", "in a cozy house", "on a green hill", "in the garden", "at school",
          "by the lake", "in the backyard", "on the beach", "in the kitchen", "at the market", "under a bridge",
          "in a dark cave", "near the pond"]
things = ["ball", "stone", "kite", "box", "boat", "flower", "hat", "toy car", "key", "shell", "book", "cake",
          "balloon", "cup", "doll", "drum", "apple", "feather", "map", "blanket", "jar", "bell", "coin", "sock",
          "ring", "leaf", "pencil", "truck"]
colors = ["red", "blue", "shiny", "yellow", "green", "pink", "big", "old", "new", "pretty", "funny", "soft",
          "purple", "small", "bright", "dirty"]
feelings = ["happy", "sad", "scared", "excited", "curious", "tired", "proud", "surprised", "angry", "bored",
            "worried", "hungry", "lonely", "glad"]
verbs = ["play", "run", "jump", "swim", "read", "dance", "sing", "draw", "climb", "build", "paint", "bake", "hide",
         "explore"]
family = ["mom", "dad", "grandma", "grandpa", "sister", "brother", "friend", "teacher"]
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
    "One day, {name}'s {family} said, \"Let's go outside!\" {name} was so {feeling}.",
    "Once upon a time, a {adj} {animal} wanted to find a {color} {thing}.",
    "{name} was {feeling}. {name} did not want to {verb} today.",
    "{name} wanted to {verb} with the {adj} {animal}, but the {animal} was {feeling}.",
    "It was a rainy day. {name} and {name2} stayed inside and wanted to {verb}.",
    "{name}'s {family} gave {name} a {color} {thing} for a present.",
    "Once there was a {adj} {animal} who could not {verb}.",
    "One night, {name} heard a noise {place}. It was a {adj} {animal}.",
    "{name} lost a {color} {thing} {place}. {name} looked everywhere.",
    "The {adj} {animal} and the {adj2} {animal2} met {place}.",
    "Every morning, {name} went {place} to {verb}. One day, something was different.",
]


def make():
    t = random.choice(templates)
    n1, n2 = random.sample(names, 2)
    a1, a2 = random.sample(animals, 2)
    j1, j2 = random.sample(adjs, 2)
    return t.format(name=n1, name2=n2, adj=j1, adj2=j2, animal=a1, animal2=a2, place=random.choice(places),
                    thing=random.choice(things), color=random.choice(colors), feeling=random.choice(feelings),
                    verb=random.choice(verbs), family=random.choice(family))


held_out = set()
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "stories_holdout100.jsonl")) as f:
    for line in f:
        held_out.add(json.loads(line)["prompt"])
seen, out = set(held_out), []
while len(out) < count:
    s = make()
    if s not in seen:
        seen.add(s)
        out.append(s)
with open(out_path + ".tmp", "w") as f:
    for s in out:
        f.write(json.dumps({"prompt": s}) + "\n")
os.replace(out_path + ".tmp", out_path)
