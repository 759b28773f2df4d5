"""The answer in words and figures: the page's and the CLI's texts (report), the verdict, the
comparison and sweep tables, the time bounds' words, the memory bar, the source's formula, the
export and the link that reproduces it all."""
