"""The domain: the aggregates and their events, the clock, ids, limits and domain errors.

It imports nothing else of kbes. Rules about an article live on the aggregate, so every door
(agent, person, import) gets them.

Logs written before the rooms were sub-packages name the aggregates by their old modules
(`kbes.article:Article.Saved`); `kbes.domain.topics` registers those names, so every existing
log and export still loads."""

from kbes.domain import topics as topics
