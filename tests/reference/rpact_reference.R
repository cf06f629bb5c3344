# Reference boundaries for nlpower.sequential (tests/sequential/test_reference.py).
# Run: Rscript --vanilla tests/reference/rpact_reference.R > tests/reference/rpact_reference.json
# Needs rpact and jsonlite.
#
# Group-sequential designs for an i.i.d. normal endpoint: alpha-spending
# (Lan-DeMets O'Brien-Fleming type asOF, Pocock type asP, Hwang-Shih-DeCani
# asHSD) for K looks, one- and two-sided; non-binding futility given on the
# z scale or by beta spending (bsOF, bsP, bsHSD); and each design's
# characteristics (drift for power 1 - beta, inflation factor, expected
# sample size relative to the fixed design under H0, H1 and halfway).
suppressMessages({ library(rpact); library(jsonlite) })

case <- function(name, ...) {
  d <- getDesignGroupSequential(...)
  ch <- getDesignCharacteristics(d)
  args <- list(...)
  list(name = name,
       args = args,
       information_rates = d$informationRates,
       critical_values = d$criticalValues,
       futility_bounds = if (all(is.na(d$futilityBounds))) NULL else d$futilityBounds,
       alpha_spent = d$alphaSpent,
       beta_spent = if (all(is.na(d$betaSpent))) NULL else d$betaSpent,
       stage_levels = d$stageLevels,
       shift = ch$shift,
       inflation_factor = ch$inflationFactor,
       power = ch$power,
       rejection_probabilities = ch$rejectionProbabilities,
       futility_probabilities = if (is.null(ch$futilityProbabilities) || all(is.na(ch$futilityProbabilities))) NULL
                                else ch$futilityProbabilities,
       asn_h1 = ch$averageSampleNumber1, asn_h01 = ch$averageSampleNumber01,
       asn_h0 = ch$averageSampleNumber0)
}

cases <- list(
  case("obf3", kMax = 3, alpha = 0.025, sided = 1, typeOfDesign = "asOF"),
  case("pocock3", kMax = 3, alpha = 0.025, sided = 1, typeOfDesign = "asP"),
  case("hsd3_m4", kMax = 3, alpha = 0.025, sided = 1, typeOfDesign = "asHSD", gammaA = -4),
  case("hsd4_1", kMax = 4, alpha = 0.05, sided = 1, typeOfDesign = "asHSD", gammaA = 1),
  case("obf5_unequal", kMax = 5, alpha = 0.025, sided = 1, typeOfDesign = "asOF",
       informationRates = c(0.15, 0.3, 0.55, 0.8, 1)),
  case("obf3_two_sided", kMax = 3, alpha = 0.05, sided = 2, typeOfDesign = "asOF"),
  case("pocock4_two_sided", kMax = 4, alpha = 0.05, sided = 2, typeOfDesign = "asP"),
  case("obf3_futility0", kMax = 3, alpha = 0.025, sided = 1, typeOfDesign = "asOF",
       futilityBounds = c(0, 0), bindingFutility = FALSE),
  case("obf3_bsof", kMax = 3, alpha = 0.025, beta = 0.2, sided = 1, typeOfDesign = "asOF",
       typeBetaSpending = "bsOF", bindingFutility = FALSE),
  case("pocock4_bsp", kMax = 4, alpha = 0.025, beta = 0.1, sided = 1, typeOfDesign = "asP",
       typeBetaSpending = "bsP", bindingFutility = FALSE),
  case("hsd3_bshsd", kMax = 3, alpha = 0.025, beta = 0.2, sided = 1, typeOfDesign = "asHSD",
       gammaA = -4, typeBetaSpending = "bsHSD", gammaB = -2, bindingFutility = FALSE)
)
out <- list(versions = list(R = R.version.string, rpact = format(packageVersion("rpact"))),
            cases = cases)
cat(toJSON(out, digits = NA, auto_unbox = TRUE, pretty = TRUE, null = "null"), "\n")
