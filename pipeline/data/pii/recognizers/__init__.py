"""Presidio recognizers for Turkish, Russian and English personal data: one module per recognizer (as
presidio_analyzer/predefined_recognizers/ keeps them), the base and the helpers they share in base.py, and here
the registry the engine builds from (IDENTIFIER_RECOGNIZERS).

Every recognizer is a Presidio LocalRecognizer (usable in an AnalyzerEngine registry) whose work is in
`find(ctx)`: candidates from a regular expression or from the shared digit runs, a checksum or format
check, then a score from context words. Scores:
  * checksum-valid identifiers: 0.75-0.85 alone, up to 1.0 with a context word;
  * identifiers whose checksum passes by chance too often (10-digit VKN/INN, OGRN) or that have none
    (passports, dates of birth): below the default threshold (0.5) unless a context word is near;
  * words that announce another kind of number (order, invoice, tracking...) just before a candidate lower it.
Built-in Presidio recognizers are not loaded: see DISABLED_BUILTINS for why.
"""
from pipeline.data.pii.recognizers.address import AddressRecognizer
from pipeline.data.pii.recognizers.date_of_birth import DateOfBirthRecognizer
from pipeline.data.pii.recognizers.email_address import EmailAddressRecognizer
from pipeline.data.pii.recognizers.iban import IbanMod97Recognizer
from pipeline.data.pii.recognizers.inn import InnRecognizer
from pipeline.data.pii.recognizers.ip_address import IpAddressRecognizer
from pipeline.data.pii.recognizers.license_plate import LicensePlateRecognizer
from pipeline.data.pii.recognizers.ogrn import OgrnRecognizer
from pipeline.data.pii.recognizers.passport import PassportRecognizer
from pipeline.data.pii.recognizers.payment_card import PaymentCardRecognizer
from pipeline.data.pii.recognizers.phone import PhoneNumberRecognizer
from pipeline.data.pii.recognizers.ru_license_plate import RuLicensePlateRecognizer
from pipeline.data.pii.recognizers.secret import SecretRecognizer
from pipeline.data.pii.recognizers.snils import SnilsRecognizer
from pipeline.data.pii.recognizers.ssn import SsnRecognizer
from pipeline.data.pii.recognizers.tckn import TcknRecognizer
from pipeline.data.pii.recognizers.vkn import VknRecognizer

# The built-in recognizers are replaced, not loaded: on this data they misfire or cannot see tr/ru text.
# Ours have other class names: Presidio's loader (load_predefined_recognizers) finds a recognizer class by
# its name among all subclasses, so a shared name would break a stock registry built in the same process.
DISABLED_BUILTINS = {
    "MedicalLicenseRecognizer": "matched the bank code inside IBANs (TR3300061...)",
    "UsLicenseRecognizer": "US_DRIVER_LICENSE matches plain words",
    "NhsRecognizer": "UK_NHS fired on phone numbers at score 1.0",
    "UsBankRecognizer": "any 8-17 digit number",
    "UsItinRecognizer": "US only; overlaps TCKN/SNILS digits",
    "UsPassportRecognizer": "9 digits without context; replaced by PassportRecognizer",
    "UsSsnRecognizer": "replaced by SsnRecognizer: invalid areas (000, 666, 9xx) out, bare nine digits need context",
    "PhoneRecognizer": "default regions have no TR/RU; slowest recognizer; replaced by PhoneNumberRecognizer",
    "EmailRecognizer": "tldextract tries the network; replaced by EmailAddressRecognizer",
    "IbanRecognizer": "replaced by IbanMod97Recognizer: spaced TR IBANs, trims trailing words",
    "CreditCardRecognizer": "not loaded for tr/ru; replaced by PaymentCardRecognizer: issuer prefixes, "
                            "negative context",
    "IpRecognizer": "replaced by IpAddressRecognizer: a version word lowers an IPv4-shaped number",
    "TrNationalIdRecognizer": "disabled by default; replaced with context-aware TcknRecognizer",
    "TrLicensePlateRecognizer": "allows 2-4 digits only, missed '06 A 12345'",
    "DateRecognizer": "every date; only dates of birth are personal data here",
    "UrlRecognizer": "URLs are not personal data by themselves; credentials in URLs are SECRET",
    "SpacyRecognizer": "no NER model can be downloaded; names come from natasha and the gazetteer",
}

# the order the engine asks them in, as before the split into modules
IDENTIFIER_RECOGNIZERS = (
    TcknRecognizer, VknRecognizer, InnRecognizer, SnilsRecognizer, OgrnRecognizer, PaymentCardRecognizer,
    PhoneNumberRecognizer, IbanMod97Recognizer, EmailAddressRecognizer, IpAddressRecognizer, PassportRecognizer,
    LicensePlateRecognizer, RuLicensePlateRecognizer, DateOfBirthRecognizer, AddressRecognizer, SecretRecognizer,
    SsnRecognizer,
)
