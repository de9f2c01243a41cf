"""Authoring: releases, notebooks, the nbgrader bridge, the mutant audit."""
