# Reference values for tests/inference/: confint, anova (LRT and Type III F) and emmeans.
#
# Usage (from the repository root):
#   Rscript --vanilla tests/reference/inference_reference.R
# writes tests/reference/inference_reference.json.  R 4.2, lme4 1.1-31,
# lmerTest 3.1-3, pbkrtest, emmeans 1.8.4, ordinal.
#
# * confint: lme4's confint.merMod, method "Wald" and "profile", on sleepstudy
#   (REML and ML), Penicillin (REML) and cbpp (binomial glmer).
# * anova: lme4's anova of nested fits (REML fits refitted by ML), sleepstudy
#   (random intercept vs correlated slope; then without Days) and cbpp; lmerTest's
#   Type III table (Satterthwaite and Kenward-Roger) on sleepstudy and on the
#   first three systems of crossed4.csv (sum contrasts; and, treatment coded,
#   system * half, half = the item number's parity).
# * emmeans: marginal means per level and pairwise contrasts with Tukey and Holm:
#   lmer on the 3-system ratings (Kenward-Roger and Satterthwaite df), glmer on
#   VerbAgg (btype: link and response scale), clmm on wine (temp x contact cells,
#   latent scale, and the category probabilities of each cell).

suppressPackageStartupMessages({
  library(lme4)
  library(lmerTest)
  library(pbkrtest)
  library(emmeans)
  library(ordinal)
  library(jsonlite)
})

file_arg <- grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)
script_dir <- if (length(file_arg)) dirname(normalizePath(sub("^--file=", "", file_arg))) else "tests/reference"
data_dir <- file.path(script_dir, "data")

ss <- read.csv(file.path(data_dir, "sleepstudy.csv"))
ss$Subject <- factor(ss$Subject)
pen <- read.csv(file.path(data_dir, "penicillin.csv"))
pen$plate <- factor(pen$plate); pen$sample <- factor(pen$sample)
cbpp <- read.csv(file.path(data_dir, "cbpp.csv"))
cbpp$herd <- factor(cbpp$herd); cbpp$period <- factor(cbpp$period)
r3 <- read.csv(file.path(data_dir, "crossed4.csv"))
r3 <- r3[r3$system %in% c("A", "B", "C"), ]
r3$system <- factor(r3$system); r3$worker <- factor(r3$worker); r3$item <- factor(r3$item)
contrasts(r3$system) <- contr.sum(3)
va <- read.csv(file.path(data_dir, "VerbAgg.csv"))
va$id <- factor(va$id); va$item <- factor(va$item)
for (v in c("Gender", "btype", "situ", "mode", "resp", "r2")) if (v %in% names(va)) va[[v]] <- factor(va[[v]])
wine <- read.csv(file.path(data_dir, "wine.csv"))
wine$rating <- factor(wine$rating, ordered = TRUE)
wine$temp <- factor(wine$temp); wine$contact <- factor(wine$contact); wine$judge <- factor(wine$judge)

ci_frame <- function(ci) list(names = rownames(ci), lower = unname(ci[, 1]), upper = unname(ci[, 2]))

# -- confint ----------------------------------------------------------------------
confint_cases <- list(
  list(name = "sleepstudy_reml", fit = function() lme4::lmer(Reaction ~ Days + (Days | Subject), ss)),
  list(name = "sleepstudy_ml", fit = function() lme4::lmer(Reaction ~ Days + (Days | Subject), ss, REML = FALSE)),
  list(name = "penicillin_reml", fit = function() lme4::lmer(diameter ~ 1 + (1 | plate) + (1 | sample), pen)),
  list(name = "cbpp", fit = function() glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial))
)
confint_out <- lapply(confint_cases, function(cs) {
  m <- cs$fit()
  list(name = cs$name, wald = ci_frame(confint(m, method = "Wald")),
       profile = ci_frame(suppressWarnings(confint(m, method = "profile"))))
})
names(confint_out) <- vapply(confint_cases, `[[`, "", "name")

# -- anova: likelihood-ratio tests ----------------------------------------------
lrt <- function(a) list(models = rownames(a), npar = a$npar, AIC = a$AIC, BIC = a$BIC,
                        logLik = a$logLik, deviance = a$deviance, Chisq = a$Chisq,
                        Df = a$Df, p = a[["Pr(>Chisq)"]])
s0 <- lme4::lmer(Reaction ~ 1 + (1 | Subject), ss)
s1 <- lme4::lmer(Reaction ~ Days + (1 | Subject), ss)
s2 <- lme4::lmer(Reaction ~ Days + (Days | Subject), ss)
g0 <- glmer(cbind(incidence, size - incidence) ~ 1 + (1 | herd), cbpp, binomial)
g1 <- glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), cbpp, binomial)
anova_out <- list(
  sleepstudy = lrt(anova(s0, s1, s2)),
  cbpp = lrt(anova(g0, g1))
)

# -- Type III F tests (lmerTest) ----------------------------------------------------
type3 <- function(m, ddf) {
  a <- anova(m, type = 3, ddf = ddf)
  list(terms = rownames(a), SumSq = a[["Sum Sq"]], MeanSq = a[["Mean Sq"]], NumDF = a$NumDF,
       DenDF = a$DenDF, F = a[["F value"]], p = a[["Pr(>F)"]])
}
t_ss <- lmerTest::lmer(Reaction ~ Days + (Days | Subject), ss)
t_r3 <- lmerTest::lmer(rating ~ system + (1 | worker) + (1 | item), r3)
# treatment-coded factors in an interaction (lmerTest maps the zero-sum model's hypotheses)
r3i <- read.csv(file.path(data_dir, "crossed4.csv"))
r3i <- r3i[r3i$system %in% c("A", "B", "C"), ]
r3i$half <- factor(ifelse(as.integer(sub("i", "", r3i$item)) %% 2 == 0, "even", "odd"))
r3i$system <- factor(r3i$system)
t_r3i <- lmerTest::lmer(rating ~ system * half + (1 | worker) + (1 | item), r3i)
type3_out <- list(
  sleepstudy = list(satterthwaite = type3(t_ss, "Satterthwaite"), kenward_roger = type3(t_ss, "Kenward-Roger")),
  ratings3 = list(satterthwaite = type3(t_r3, "Satterthwaite"), kenward_roger = type3(t_r3, "Kenward-Roger")),
  ratings3_interaction = list(satterthwaite = type3(t_r3i, "Satterthwaite"),
                              kenward_roger = type3(t_r3i, "Kenward-Roger"))
)

# -- emmeans --------------------------------------------------------------------------
em_frame <- function(e) {
  s <- as.data.frame(summary(e))
  est <- intersect(c("emmean", "prob", "rate", "response"), names(s))[1]
  list(levels = as.character(interaction(s[, seq_len(which(names(s) == est) - 1), drop = FALSE], sep = " ")),
       estimate = s[[est]], SE = s$SE, df = s$df)
}
pairs_frame <- function(p) {
  s <- as.data.frame(summary(p))
  stat <- intersect(c("t.ratio", "z.ratio"), names(s))[1]
  list(contrast = as.character(s$contrast), estimate = s$estimate, SE = s$SE, df = s$df,
       statistic = s[[stat]], p = s$p.value)
}
emm_block <- function(e, ...) list(emmeans = em_frame(e), tukey = pairs_frame(pairs(e, adjust = "tukey", ...)),
                                   holm = pairs_frame(pairs(e, adjust = "holm", ...)),
                                   bonferroni = pairs_frame(pairs(e, adjust = "bonferroni", ...)),
                                   fdr = pairs_frame(pairs(e, adjust = "fdr", ...)),
                                   none = pairs_frame(pairs(e, adjust = "none", ...)))
m_r3 <- lme4::lmer(rating ~ system + (1 | worker) + (1 | item), r3)
m_va <- glmer(r2 ~ Anger + Gender + btype + situ + (1 | id) + (1 | item), va, binomial)
m_wi <- clmm(rating ~ temp * contact + (1 | judge), data = wine)
e_va <- emmeans(m_va, ~ btype)
emmeans_out <- list(
  lmer_kr = emm_block(emmeans(m_r3, ~ system, lmer.df = "kenward-roger")),
  lmer_satterthwaite = emm_block(emmeans(m_r3, ~ system, lmer.df = "satterthwaite")),
  glmer_link = emm_block(e_va),
  glmer_response = list(emmeans = em_frame(regrid(e_va)),
                        tukey = pairs_frame(pairs(regrid(e_va), adjust = "tukey"))),
  glmer_vs_baseline = pairs_frame(contrast(e_va, "trt.vs.ctrl", adjust = "holm")),
  clmm_latent = emm_block(emmeans(m_wi, ~ temp * contact, mode = "latent")),
  clmm_prob = {
    p <- as.data.frame(summary(emmeans(m_wi, ~ rating | temp * contact, mode = "prob")))
    list(cell = paste(p$temp, p$contact), category = as.character(p$rating),
         estimate = p$prob, SE = p$SE)
  }
)

out <- list(
  versions = list(R = R.version.string, lme4 = as.character(packageVersion("lme4")),
                  lmerTest = as.character(packageVersion("lmerTest")),
                  pbkrtest = as.character(packageVersion("pbkrtest")),
                  emmeans = as.character(packageVersion("emmeans")),
                  ordinal = as.character(packageVersion("ordinal"))),
  confint = confint_out, anova = anova_out, type3 = type3_out, emmeans = emmeans_out
)
write_json(out, file.path(script_dir, "inference_reference.json"), digits = NA, auto_unbox = TRUE,
           pretty = TRUE, na = "null")
cat("wrote", file.path(script_dir, "inference_reference.json"), "\n")
