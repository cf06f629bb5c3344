"""Power for comparing two classifiers on accuracy (Card et al. 2020, section 3, App. C, E, F)."""
